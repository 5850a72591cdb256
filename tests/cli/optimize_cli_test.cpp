// `kernelarc optimize`, `runs` and `show` end to end on the CPU backend with the template
// synthesizer: on each built-in CPU problem a budget of 12 is spent in full, the winner is the
// fittest finalist of the side-by-side re-measurement and its speedup interval is reported, a run
// killed with SIGKILL resumes without losing or repeating an evaluation (on two CPU workers too),
// a SIGINT stops it resumable, during the reference's draw too, and bad flags get one-line
// errors. How fast the winners are is measured by tools/optimize_bench, never asserted here: on
// a loaded 2-core machine timings are not a property of the code.
#include <gtest/gtest.h>

#include <unistd.h>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "cli/cli_test_support.h"
#include "source_dir.h"
#include "store/workspace.h"

namespace {

namespace fs = std::filesystem;

// Fast guard settings: the search needs a ranking, not a publication-grade figure; the final
// side-by-side re-measurement decides the reported speedup.
const std::string kQuickChecks =
    " --trials 1 --warmup 1 --iterations 5 --final-top 2 --final-rounds 2 --plain";

class OptimizeCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("kernelarc-optimize-test-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

/// A bundled CPU problem and the workload its run measures: a mid-sized one, where every
/// template's threads have work, rather than the largest, whose oracle draws and guard copies
/// alone made a run take up to 150 s of CI time and tested nothing more.
struct CpuRun {
  const char* problem;
  const char* workload;
};

void PrintTo(const CpuRun& run, std::ostream* out) {
  *out << run.problem;
}

class OptimizeCpuProblem : public OptimizeCli, public ::testing::WithParamInterface<CpuRun> {};

// Enough candidates for a turn of each agent and two finalists besides the baseline (8 of 12 cut a
// minute of CI over the five problems); larger budgets test nothing more here.
constexpr int kCpuBudget = 8;

TEST_P(OptimizeCpuProblem, SpendsItsBudgetAndReportsTheFittestFinalist) {
  const fs::path out = dir_ / "best";
  const std::string problem = (kSource / "problems/cpu" / GetParam().problem).string();
  const std::string workload = std::string(" --workloads ") + GetParam().workload;
  const auto result = run("optimize " + problem + " --budget " + std::to_string(kCpuBudget) +
                          " --seed 1 --workspace " + (dir_ / "ws").string() + " --out " +
                          out.string() + workload + kQuickChecks);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  std::ifstream file(out / "summary.json");
  const auto summary = nlohmann::json::parse(file);
  EXPECT_EQ(summary["evaluated"].get<int>(), kCpuBudget) << result.output;
  // A fresh run measures every candidate it evaluates, and says how fast it went.
  EXPECT_EQ(summary["measured"].get<int>(), kCpuBudget) << result.output;
  EXPECT_GT(summary["search_seconds"].get<double>(), 0) << result.output;
  EXPECT_NE(result.output.find("candidates/s"), std::string::npos) << result.output;
  ASSERT_TRUE(summary.contains("speedup")) << result.output;
  const auto& speedup = summary["speedup"];
  EXPECT_GT(speedup["low"].get<double>(), 0) << result.output;
  EXPECT_LE(speedup["low"].get<double>(), speedup["value"].get<double>()) << result.output;
  EXPECT_GE(speedup["high"].get<double>(), speedup["value"].get<double>()) << result.output;
  // The template library serves every built-in CPU problem, so candidates other than the
  // bundled baseline passed the guard and reached the final re-measurement, ranked by fitness.
  const auto& finalists = summary["finalists"];
  ASSERT_GE(finalists.size(), 2u) << result.output;
  for (std::size_t i = 1; i < finalists.size(); ++i)
    EXPECT_GE(finalists[i - 1]["fitness"].get<double>(), finalists[i]["fitness"].get<double>());
  EXPECT_EQ(summary["kept_baseline"].get<bool>(), speedup["high"].get<double>() < 1.0);
  // The figure for the log (ctest keeps it in LastTest.log), not an assertion on time.
  std::cout << GetParam().problem << ": " << summary["finalists"][0]["label"].get<std::string>()
            << " speedup over naive " << summary["speedup"].dump() << '\n';
  EXPECT_TRUE(fs::exists(out / "solution.json"));
  EXPECT_TRUE(fs::exists(out / "traces.json"));
  EXPECT_FALSE(fs::is_empty(out / "sources"));
  // The winner's solution is an ordinary solution: `eval` accepts it.
  const auto eval = run("eval " + problem + " " + out.string() + " --workspace " +
                        (dir_ / "ws").string() + workload + " --iterations 5 --no-baseline");
  EXPECT_EQ(eval.exit_code, 0) << eval.output;
}

// A row reduction, a softmax (exp) and a GEMM; the element-wise template's whole run is the
// kill-and-resume test below (silu_and_mul_f32). Every template passes the guard on every CPU
// problem in Library/CpuTemplateGuard; the layernorm and silu_and_mul runs here added 75 s of CI
// and no path of their own.
INSTANTIATE_TEST_SUITE_P(BuiltIn, OptimizeCpuProblem,
                         ::testing::Values(CpuRun{"rmsnorm_f32", "e0efc7cf"},  // 257 x 5120
                                           CpuRun{"softmax_f32", "e4a49ead"},  // 257 x 1537
                                           CpuRun{"matmul_f32", "dc78739b"}    // 449 x 401 x 383
                                           ),
                         [](const ::testing::TestParamInfo<CpuRun>& info) {
                           return std::string(info.param.problem);
                         });

// Sends `signal` to `optimize` once a few evaluations are stored, resumes it with the same
// `workers` flags and checks that the resumed run ends as an uninterrupted one; returns the
// resumed run's output. SIGKILL leaves the run marked running, shown as abandoned; SIGINT lets
// the search stop, and leaves it stopped.
std::string interrupt_and_resume(const fs::path& dir, const std::string& workers, int signal) {
  const fs::path workspace = dir / "ws";
  const std::string problem = (kSource / "problems/cpu/silu_and_mul_f32").string();
  const std::string command = std::string(KERNELARC_BINARY) + " optimize " + problem +
                              " --budget 6 --workspace " + workspace.string() +
                              // Its 256 x 5120 workload: what is asserted does not depend on the
                              // size, and the largest (1024 x 14336) made each test take 150 s.
                              " --workloads c3e85f21" + kQuickChecks + workers;
  const pid_t child = fork();
  EXPECT_GE(child, 0);
  if (child == 0) {
    execl("/bin/sh", "sh", "-c", ("exec " + command + " > /dev/null 2>&1").c_str(), nullptr);
    _exit(127);
  }
  // Kill it once a few evaluations are in the store, mid-search.
  int64_t used = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(3);
  while (used < 3 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (!fs::exists(workspace / "kernelarc.db")) continue;
    kernelarc::Workspace store(workspace);
    const auto runs = store.database().list_runs();
    if (!runs.empty()) used = store.database().budget_of(runs.front().id).used;
  }
  EXPECT_GE(used, 3);
  kill(child, signal);
  int status = 0;
  waitpid(child, &status, 0);
  if (signal == SIGKILL) {
    EXPECT_TRUE(WIFSIGNALED(status));
  } else {
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 128 + signal) << status;
  }
  {
    kernelarc::Workspace store(workspace);
    const auto run = store.database().list_runs().front();
    EXPECT_EQ(run.status,
              signal == SIGKILL ? kernelarc::RunStatus::Running : kernelarc::RunStatus::Stopped);
    EXPECT_LT(store.database().budget_of(run.id).used, 7);
  }
  const auto listed = run("runs --workspace " + workspace.string());
  EXPECT_NE(listed.output.find(signal == SIGKILL ? " abandoned " : " stopped "), std::string::npos)
      << listed.output;

  const auto resumed = run("optimize " + problem + " --resume --workspace " + workspace.string() +
                           " --plain" + workers);
  EXPECT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("(stored)"), std::string::npos) << resumed.output;
  kernelarc::Workspace store(workspace);
  const auto run_row = store.database().list_runs().front();
  EXPECT_EQ(run_row.status, kernelarc::RunStatus::Finished);
  // What an uninterrupted run evaluates: the baseline and the budget, each once.
  EXPECT_EQ(store.database().budget_of(run_row.id).used, 7);
  EXPECT_EQ(store.database().candidates_of(run_row.id).size(), 7u);
  EXPECT_TRUE(store.database().unevaluated_candidates(run_row.id).empty());

  const auto runs = run("runs --workspace " + workspace.string());
  EXPECT_EQ(runs.exit_code, 0) << runs.output;
  EXPECT_NE(runs.output.find("silu_and_mul_f32"), std::string::npos) << runs.output;
  EXPECT_NE(runs.output.find("7/7"), std::string::npos) << runs.output;
  const auto show =
      run("show " + std::to_string(run_row.id) + " --workspace " + workspace.string());
  EXPECT_EQ(show.exit_code, 0) << show.output;
  EXPECT_NE(show.output.find("trees"), std::string::npos) << show.output;
  EXPECT_NE(show.output.find("lineage: #"), std::string::npos) << show.output;
  return resumed.output;
}

TEST_F(OptimizeCli, KilledMidRunAndResumedLosesNoEvaluation) {
  interrupt_and_resume(dir_, "", SIGKILL);
}

// Ctrl-C: the run stops after the candidate in flight, stays resumable, and resumes as a killed
// one does.
TEST_F(OptimizeCli, InterruptedMidRunStopsAndResumesLosingNoEvaluation) {
  interrupt_and_resume(dir_, "", SIGINT);
}

// Ctrl-C during the reference's draw (minutes a workload on GPU-sized shapes) stops the run at
// once: the draw is cut, nothing is measured or recorded as failed, and the resume draws again.
TEST_F(OptimizeCli, InterruptedDuringTheReferenceDrawStopsAtOnceAndResumes) {
  // silu_and_mul_f32 under the same name, its reference sleeping while `hold` exists.
  const fs::path problem = dir_ / "sleeping_silu_and_mul";
  fs::copy(kSource / "problems/cpu/silu_and_mul_f32", problem, fs::copy_options::recursive);
  const fs::path hold = dir_ / "hold";
  std::ofstream(hold) << "sleep\n";
  auto definition = nlohmann::json::parse(std::ifstream(problem / "definition.json"));
  definition["reference"] =
      "import os\nimport time\n\nimport torch\n\n\ndef run(x):\n    if os.path.exists(" +
      nlohmann::json(hold.string()).dump() +
      "):\n        time.sleep(600)\n    d = x.shape[-1] // 2\n"
      "    return torch.nn.functional.silu(x[..., :d]) * x[..., d:]\n";
  std::ofstream(problem / "definition.json") << definition.dump(2);
  const fs::path workspace = dir_ / "ws";
  const fs::path log = dir_ / "optimize.log";
  const std::string workspace_flag = " --workspace " + workspace.string();
  const std::string command = std::string(KERNELARC_BINARY) + " optimize " + problem.string() +
                              " --budget 2 --workloads 9a7d2c84 --keep-accuracy" + workspace_flag +
                              kQuickChecks;
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    execl("/bin/sh", "sh", "-c", ("exec " + command + " > " + log.string() + " 2>&1").c_str(),
          nullptr);
    _exit(127);
  }
  auto output = [&] {
    std::ifstream file(log);
    return std::string(std::istreambuf_iterator<char>(file), {});
  };
  // The baseline's draw is under way once its line comes.
  const std::string drawing = "reference: workload 9a7d2c84-silu-33 (";
  auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(3);
  while (output().find(drawing) == std::string::npos && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_NE(output().find(drawing), std::string::npos) << output();
  kill(child, SIGINT);
  // Not a timing: a draw left to run would hold the process for the reference's whole sleep.
  int status = 0;
  pid_t ended = 0;
  deadline = std::chrono::steady_clock::now() + std::chrono::minutes(2);
  while ((ended = waitpid(child, &status, WNOHANG)) == 0 &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  if (ended != child) {
    kill(child, SIGKILL);
    waitpid(child, &status, 0);
    FAIL() << "still running 2 minutes after SIGINT: " << output();
  }
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 130) << status << ": " << output();
  EXPECT_NE(output().find("run 1 stopped (interrupted by SIGINT): 0 candidates evaluated, 0 "
                          "passed; no final re-measurement. `kernelarc optimize " +
                          problem.string() + " --resume 1" + workspace_flag + "` continues it"),
            std::string::npos)
      << output();
  {
    kernelarc::Workspace store(workspace);
    const auto run = store.database().list_runs().front();
    EXPECT_EQ(run.status, kernelarc::RunStatus::Stopped);
    EXPECT_EQ(store.database().budget_of(run.id).used, 0) << "the baseline was not measured";
  }
  const auto listed = run("runs" + workspace_flag);
  EXPECT_NE(listed.output.find(" stopped "), std::string::npos) << listed.output;

  fs::remove(hold);
  const auto resumed =
      run("optimize " + problem.string() + " --resume" + workspace_flag + " --plain");
  EXPECT_EQ(resumed.exit_code, 0) << resumed.output;
  kernelarc::Workspace store(workspace);
  const auto run_row = store.database().list_runs().front();
  EXPECT_EQ(run_row.status, kernelarc::RunStatus::Finished);
  EXPECT_EQ(store.database().budget_of(run_row.id).used, 3);
  EXPECT_TRUE(store.database().unevaluated_candidates(run_row.id).empty());
  // The resume, given no --keep-accuracy, kept the run's.
  EXPECT_EQ(run_row.config.value("keep_accuracy", false), true) << run_row.config.dump();
}

// Two CPU workers, each on its own cores, measure at once; killed with evaluations in flight,
// the run resumes on both and ends as an uninterrupted one.
TEST_F(OptimizeCli, KilledMidPoolRunAndResumedLosesNoEvaluation) {
  const std::string output = interrupt_and_resume(dir_, " --cpu-workers 2", SIGKILL);
  // Each progress line says where its candidate was measured: both workers measured some.
  std::set<std::string> workers;
  for (std::size_t at = output.find(" guard on "); at != std::string::npos;
       at = output.find(" guard on ", at + 1))
    workers.insert(output.substr(at, output.find(']', at) - at));
  EXPECT_EQ(workers.size(), 2u) << output;
  EXPECT_NE(output.find("measuring on 2 at once"), std::string::npos) << output;
}

TEST_F(OptimizeCli, BadFlagsGetOneLineErrors) {
  const std::string problem = (kSource / "problems/cpu/softmax_f32").string();
  const std::string workspace = " --workspace " + (dir_ / "ws").string();
  const std::vector<std::pair<std::string, std::string>> cases{
      {"--policy annealing", "--policy annealing: expected one of random, beam, mcts, islands"},
      {"--agents 9", "--agents: 9 agents asked, expected 1 to 6"},
      {"--agents memory,speed", "unknown agent strategy \"speed\""},
      {"--synth gpt", "--synth gpt: expected template, llm, command, template+llm or"},
      {"--synth llm", "--synth llm: give --llm-config FILE, or --llm-endpoint URL and --llm-model"},
      {"--synth command", "--synth command: give the program with --synth-command"},
      {"--synth llm --llm-endpoint http://127.0.0.1:9/v1 --llm-model m --llm-api-key-env sk-abc",
       "--llm-api-key-env"},
      {"--resume", "--resume: no unfinished run of softmax_f32 in the workspace"},
      {"--resume 42", "--resume: the workspace has no run 42"},
      {"--backend tpu", "--backend tpu: expected cpu or cuda"},
      {"--workloads nosuch", "--workloads: nosuch"},
      {"--device cuda:0,x", "--device cuda:0,x: expected cpu, cuda:N, a list cuda:N,M,..."},
      {"--device cuda:1,1", "--device cuda:1,1: cuda:1 is named twice"},
      {"--device tpu:0", "--device tpu:0: expected cpu, cuda:N"},
      {"--cpu-workers 0", "--cpu-workers 0: expected at least 1"},
      {"--cpu-workers 100000", "--cpu-workers 100000: expected at most"},
      {"--device cuda:0 --cpu-workers 2", "--cpu-workers 2: CPU workers measure on the CPU"},
  };
  for (const auto& [flags, message] : cases) {
    const auto result = run("optimize " + problem + " " + flags + workspace);
    EXPECT_EQ(result.exit_code, 2) << flags << ": " << result.output;
    EXPECT_NE(result.output.find(message), std::string::npos) << flags << ": " << result.output;
  }
  const auto show = run("show 7" + workspace);
  EXPECT_EQ(show.exit_code, 2) << show.output;
  EXPECT_NE(show.output.find("has no run 7"), std::string::npos) << show.output;
}

}  // namespace
