// `optimize --redis` with `kernelarc worker --redis` processes beside it, all on this host, on a
// redis-server started for the test: a worker killed mid-job has its job taken over by another,
// an orchestrator killed mid-search and resumed loses no evaluation, a worker of another device
// kind is refused, and each evaluation is stored exactly once.
#include <gtest/gtest.h>

#include <regex>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "distributed/host_name.h"
#include "faults/fault_test_support.h"
#include "redis_server.h"

namespace kernelarc::distributed_test {
namespace {

using faults::Kernelarc;
using faults::Outcome;
using faults::read_text;

constexpr int kBudget = 6;

/// The tickets a worker's log says it started and finished measuring, and the job of each.
struct WorkerLog {
  std::map<int64_t, std::string> started;  ///< ticket -> job id
  std::set<int64_t> finished;
};

WorkerLog read_worker_log(const fs::path& path) {
  WorkerLog log;
  const std::string text = read_text(path);
  static const std::regex started(R"(measuring ticket (\d+) \(job ([0-9-]+)\))");
  static const std::regex finished(R"(ticket (\d+) \(job [0-9-]+\) (measured|failed))");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), started);
       it != std::sregex_iterator(); ++it)
    log.started[std::stoll((*it)[1])] = (*it)[2];
  for (auto it = std::sregex_iterator(text.begin(), text.end(), finished);
       it != std::sregex_iterator(); ++it)
    log.finished.insert(std::stoll((*it)[1]));
  return log;
}

bool mid_job(const fs::path& log) {
  const WorkerLog read = read_worker_log(log);
  return read.started.size() > read.finished.size();
}

class OptimizeOverRedis : public faults::FaultTest {
 protected:
  fs::path workspace() const { return dir_ / "ws"; }

  std::vector<std::string> optimize(const std::string& url, std::vector<std::string> extra) const {
    std::vector<std::string> arguments{
        "optimize",       (kSource / "problems/cpu/rmsnorm_f32").string(),
        "--redis",        url,
        "--redis-jobs",   "2",
        "--budget",       std::to_string(kBudget),
        "--seed",         "3",
        "--workspace",    workspace().string(),
        "--workloads",    "9f5092c6",
        "--trials",       "1",
        "--warmup",       "1",
        "--iterations",   "3",
        "--final-top",    "2",
        "--final-rounds", "1",
        "--no-baseline",  "--no-skills",
        "--plain"};
    arguments.insert(arguments.end(), extra.begin(), extra.end());
    return arguments;
  }

  /// A worker with a workspace of its own and no Python: every draw it reads came through the
  /// queue. A job nobody renewed for 2 s is taken over.
  std::unique_ptr<Kernelarc> worker(const std::string& name, const std::string& url,
                                    const std::string& device = "cpu") const {
    return std::make_unique<Kernelarc>(
        std::vector<std::string>{"worker", "--redis", url, "--device", device, "--workspace",
                                 (dir_ / name).string(), "--python", "/nonexistent/python3",
                                 "--reclaim-after", "2"},
        log(name));
  }

  /// Where the stored evaluation of a candidate was measured.
  std::string measured_on(int64_t candidate_id) const {
    Workspace store(workspace());
    const auto evaluation = store.database().evaluation_of(candidate_id);
    if (!evaluation) return "(not stored)";
    const auto blob = nlohmann::json::parse(store.objects().get(evaluation->traces_key));
    return blob.value("where", "");
  }

  /// Every candidate of the run has one stored evaluation, and the budget counted each once.
  void expect_stored_exactly_once() const {
    const auto stored = faults::stored_evaluations(workspace());
    Workspace store(workspace());
    const auto run = store.database().list_runs().front();
    EXPECT_EQ(run.status, RunStatus::Finished);
    EXPECT_EQ(store.database().candidates_of(run.id).size(), stored.size());
    EXPECT_EQ(store.database().budget_of(run.id).used, static_cast<int64_t>(stored.size()));
    EXPECT_EQ(stored.size(), static_cast<std::size_t>(kBudget + 1));  // the baseline too
  }

  /// Waits for the optimize to end (at most two minutes).
  static Outcome finish(Kernelarc& run) {
    faults::wait_until(
        run, [] { return false; }, std::chrono::seconds(120));
    return run.kill_now();
  }
};

TEST_F(OptimizeOverRedis, AWorkerKilledMidJobHasItsJobTakenOverAndFinishedByAnother) {
  START_REDIS(server, dir_ / "redis");
  faults::seed_oracle(workspace());
  auto first = worker("worker-a", server.url());
  auto second = worker("worker-b", server.url());
  Kernelarc run(optimize(server.url(), {}), log("optimize"));
  ASSERT_TRUE(faults::wait_until(*first, [&] { return mid_job(log("worker-a")); }))
      << read_text(log("worker-a"));
  const Outcome killed = first->kill_now();
  ASSERT_EQ(killed.signal, SIGKILL);
  const WorkerLog before_kill = read_worker_log(log("worker-a"));
  int64_t orphan = -1;
  std::string orphan_job;
  for (const auto& [ticket, job] : before_kill.started)
    if (!before_kill.finished.count(ticket)) std::tie(orphan, orphan_job) = std::tie(ticket, job);
  ASSERT_GE(orphan, 0) << killed.output;

  const Outcome finished = finish(run);
  ASSERT_EQ(finished.exit_code, 0) << finished.output;
  const std::string taken_over = read_text(log("worker-b"));
  EXPECT_NE(taken_over.find("took over job " + orphan_job), std::string::npos) << taken_over;
  EXPECT_TRUE(read_worker_log(log("worker-b")).finished.count(orphan)) << taken_over;
  EXPECT_EQ(measured_on(orphan), "worker " + host_name() + "/cpu/" + std::to_string(second->pid()));
  expect_stored_exactly_once();
}

TEST_F(OptimizeOverRedis, AnOrchestratorKilledMidSearchResumesWithTheResultsFinishedMeanwhile) {
  START_REDIS(server, dir_ / "redis");
  faults::seed_oracle(workspace());
  auto first = worker("worker-a", server.url());
  auto second = worker("worker-b", server.url());
  {
    Kernelarc run(optimize(server.url(), {}), log("first"));
    ASSERT_TRUE(faults::wait_until(run, [&] {
      return faults::budget_used(workspace()) >= 2 &&
             (mid_job(log("worker-a")) || mid_job(log("worker-b")));
    })) << run.wait().output;
    ASSERT_EQ(run.kill_now().signal, SIGKILL);
  }
  const auto before = faults::stored_evaluations(workspace());
  // The workers finish what they hold with nobody reading the results.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while ((mid_job(log("worker-a")) || mid_job(log("worker-b"))) &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  std::set<int64_t> unread;
  for (const auto& name : {"worker-a", "worker-b"})
    for (int64_t ticket : read_worker_log(log(name)).finished)
      if (!before.count(ticket)) unread.insert(ticket);
  ASSERT_FALSE(unread.empty()) << "no job was in flight at the kill";

  const Outcome resumed =
      faults::run_kernelarc(optimize(server.url(), {"--resume"}), log("resumed"));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  for (int64_t ticket : unread)
    EXPECT_NE(
        resumed.output.find(fmt::format("ticket {}: its result was on the queue already", ticket)),
        std::string::npos)
        << resumed.output;
  faults::expect_kept(before, faults::stored_evaluations(workspace()));
  expect_stored_exactly_once();
}

TEST_F(OptimizeOverRedis, AWorkerOfAnotherDeviceKindIsRefusedAndEachEvaluationIsStoredOnce) {
  START_REDIS(server, dir_ / "redis");
  faults::seed_oracle(workspace());
  // No GPU is needed to refuse: the job's device kind is compared before anything runs. The
  // GPU worker waits alone first, so that it meets a job before the CPU worker takes them all.
  auto gpu = worker("worker-gpu", server.url(), "cuda:0");
  ASSERT_TRUE(faults::wait_until(*gpu, [&] {
    return read_text(log("worker-gpu")).find("taking cuda jobs") != std::string::npos;
  })) << read_text(log("worker-gpu"));
  Kernelarc run(optimize(server.url(), {}), log("optimize"));
  ASSERT_TRUE(faults::wait_until(run, [&] {
    return read_text(log("worker-gpu")).find("cannot take ticket") != std::string::npos;
  })) << read_text(log("worker-gpu"));
  auto cpu = worker("worker-cpu", server.url());
  const Outcome finished = finish(run);
  ASSERT_EQ(finished.exit_code, 0) << finished.output;
  EXPECT_NE(finished.output.find("the run targets cpu and this worker measures on cuda:0"),
            std::string::npos)
      << finished.output;
  EXPECT_TRUE(read_worker_log(log("worker-gpu")).started.empty()) << read_text(log("worker-gpu"));
  const WorkerLog measured = read_worker_log(log("worker-cpu"));
  EXPECT_FALSE(measured.finished.empty()) << read_text(log("worker-cpu"));
  for (int64_t ticket : measured.finished)
    EXPECT_EQ(measured_on(ticket), "worker " + host_name() + "/cpu/" + std::to_string(cpu->pid()))
        << "ticket " << ticket;
  expect_stored_exactly_once();
}

}  // namespace
}  // namespace kernelarc::distributed_test
