#include "distributed/redis_evaluation_pool.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <iostream>
#include <utility>

#include <fmt/format.h>

#include "backend/backend.h"
#include "core/hash.h"
#include "distributed/bundles.h"
#include "distributed/host_name.h"
#include "distributed/streams.h"
#include "eval/workload_run.h"

namespace kernelarc {

namespace {

constexpr int kReadBlockMs = 2000;
/// A worker that announced itself this recently counts as live for the default capacity.
constexpr std::time_t kLiveWorkerSeconds = 600;

}  // namespace

RedisEvaluationPool::RedisEvaluationPool(RedisPoolOptions options, const Problem& problem,
                                         std::vector<Workload> workloads, GuardSession& search,
                                         const GuardFlags& search_flags, std::string hardware,
                                         std::vector<LocalEvaluationPool::Slot> local)
    : options_(std::move(options)),
      workloads_(std::move(workloads)),
      redis_(options_.url),
      keys_{options_.queue},
      objects_(options_.workspace / "objects"),
      blobs_(redis_, keys_, objects_) {
  if (!options_.log) options_.log = [](const std::string& line) { std::cerr << line << '\n'; };
  ensure_worker_group(redis_, keys_);
  template_.device_kind = device_kind_name(backend_for(search_flags.device).kind());
  template_.hardware = std::move(hardware);
  template_.guard = guard_settings_to_json(search_flags, workloads_);
  template_.problem = publish_problem(blobs_, problem);
  template_.oracle = publish_oracle_draws(blobs_, search.oracle(), problem, workloads_,
                                          oracle_trials_needed(search.options()),
                                          oracle_cache_dir(search_flags.workspace));
  // One results stream per orchestrator (host, workspace, problem, settings): a resumed run
  // reads the results its predecessor left unread.
  results_ = keys_.results(ContentHasher()
                               .add(host_name())
                               .add(std::filesystem::absolute(options_.workspace).string())
                               .add(template_.problem)
                               .add(template_.guard.dump())
                               .hex());
  template_.reply_to = results_;
  remote_jobs_ = options_.remote_jobs > 0
                     ? options_.remote_jobs
                     : std::max<std::size_t>(1, live_workers(template_.device_kind));
  read_results(0);
  options_.log(
      fmt::format("queue {} at {}: {} job(s) at once for {} workers on {}, beside {} "
                  "device(s) of this host; results on {}",
                  keys_.queue, options_.url, remote_jobs_, template_.device_kind,
                  template_.hardware, local.size(), results_));
  for (LocalEvaluationPool::Slot& device : local)
    local_.push_back({std::move(device), std::nullopt, false, {}});
  for (LocalSlot& slot : local_) slot.thread = std::thread([this, &slot] { serve(slot); });
}

RedisEvaluationPool::~RedisEvaluationPool() {
  {
    const std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  work_ready_.notify_all();
  for (LocalSlot& slot : local_) slot.thread.join();
}

std::size_t RedisEvaluationPool::live_workers(const std::string& kind) {
  const RedisReply registry = redis_.command({"HGETALL", keys_.workers()});
  std::size_t live = 0;
  for (std::size_t i = 0; i + 1 < registry.elements.size(); i += 2) {
    const auto entry = nlohmann::json::parse(registry.elements[i + 1].text, nullptr, false);
    if (entry.is_object() && entry.value("kind", "") == kind &&
        std::time(nullptr) - entry.value("seen", std::time_t{0}) < kLiveWorkerSeconds)
      ++live;
  }
  return live;
}

void RedisEvaluationPool::submit(uint64_t ticket, const Solution& solution) {
  Job job = template_;
  job.ticket = ticket;
  job.solution = blobs_.put(solution_to_json(solution).dump());
  in_flight_[ticket] = job.solution;
  if (auto early = finished_early_.find({ticket, job.solution}); early != finished_early_.end()) {
    options_.log(
        fmt::format("ticket {}: its result was on the queue already (measured by {} "
                    "while no orchestrator read it)",
                    ticket, early->second.where));
    in_flight_.erase(ticket);
    applied_.insert(early->first);
    ready_.push_back(std::move(early->second));
    finished_early_.erase(early);
    return;
  }
  {
    const std::lock_guard lock(mutex_);
    for (LocalSlot& slot : local_) {
      if (slot.job) continue;
      slot.job = LocalJob{ticket, solution, job.solution};
      work_ready_.notify_all();
      return;
    }
  }
  redis_.command({"XADD", keys_.jobs(), "*", "job", job_to_json(job)});
}

EvaluationPool::Done RedisEvaluationPool::next() {
  while (true)
    if (auto done = next_within(std::chrono::milliseconds(kReadBlockMs))) return std::move(*done);
}

std::optional<EvaluationPool::Done> RedisEvaluationPool::next_within(
    std::chrono::milliseconds wait) {
  const auto deadline = std::chrono::steady_clock::now() + wait;
  while (ready_.empty()) {
    // BLOCK 0 would wait for ever: at least a millisecond.
    const auto left =
        std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return std::nullopt;
    read_results(static_cast<int>(std::min<int64_t>(left.count(), kReadBlockMs)));
    const std::lock_guard lock(mutex_);
    // Once: after an Interrupted the orchestrator goes on receiving the other jobs in flight.
    if (local_error_) std::rethrow_exception(std::exchange(local_error_, nullptr));
  }
  Done done = std::move(ready_.front());
  ready_.pop_front();
  return done;
}

// The result goes to the stream like a worker's, so that it survives this process as theirs do.
// The slot is free again before the result is posted: the ticket submitted once it is read
// finds the slot free.
void RedisEvaluationPool::serve(LocalSlot& slot) {
  try {
    RedisClient redis(options_.url);
    while (true) {
      std::unique_lock lock(mutex_);
      work_ready_.wait(lock, [&] { return stopping_ || (slot.job && !slot.running); });
      if (stopping_) return;
      slot.running = true;
      const LocalJob job = *slot.job;
      lock.unlock();
      JobResult result{job.ticket, job.solution_hash, slot.device.where, "", false, {}};
      result.traces = slot.device.evaluator->evaluate(job.solution);
      lock.lock();
      slot.job.reset();
      slot.running = false;
      lock.unlock();
      add_result(redis, results_, result);
    }
  } catch (...) {
    // next() rethrows it at its next look, within a blocking read's time.
    const std::lock_guard lock(mutex_);
    local_error_ = std::current_exception();
  }
}

void RedisEvaluationPool::read_results(int block_ms) {
  // Without BLOCK, XREAD answers at once; at construction it reads everything there is.
  std::vector<std::string> command = {"XREAD", "COUNT", "64"};
  if (block_ms > 0) command.insert(command.end(), {"BLOCK", std::to_string(block_ms)});
  command.insert(command.end(), {"STREAMS", results_, last_id_});
  while (true) {
    const auto entries = read_entries(redis_.command(command));
    for (const StreamEntry& entry : entries) {
      last_id_ = entry.id;
      const auto field = entry.fields.find("result");
      if (field != entry.fields.end()) apply(entry.id, field->second);
    }
    if (block_ms > 0 || entries.empty()) return;
    command.back() = last_id_;
  }
}

void RedisEvaluationPool::apply(const std::string& entry_id, const std::string& text) {
  const JobResult result = result_from_json(text, fmt::format("{} entry {}", results_, entry_id));
  if (!result.refused.empty() && result.requeued) {
    // Said once per worker and reason: a job may pass the same wrong worker many times.
    if (refusals_seen_.insert(result.worker + "\n" + result.refused).second)
      options_.log(
          fmt::format("{} cannot take ticket {}: {}; the job went back to the queue "
                      "for another worker",
                      result.worker, result.ticket, result.refused));
    return;
  }
  const Key key{result.ticket, result.solution};
  Done done = result.refused.empty() ? Done{result.ticket, result.traces, result.worker}
                                     : failed(result.ticket, result.worker, result.refused);
  if (const auto flight = in_flight_.find(result.ticket);
      flight != in_flight_.end() && flight->second == result.solution) {
    in_flight_.erase(flight);
    applied_.insert(key);
    ready_.push_back(std::move(done));
  } else if (applied_.count(key)) {
    options_.log(
        fmt::format("dropped a second result of ticket {} from {}: the first was "
                    "applied",
                    result.ticket, result.worker));
  } else {
    finished_early_.emplace(key, std::move(done));
  }
}

EvaluationPool::Done RedisEvaluationPool::failed(uint64_t ticket, const std::string& worker,
                                                 const std::string& why) const {
  Done done{ticket, {}, worker};
  for (const Workload& workload : workloads_) {
    Trace trace;
    trace.workload = workload.raw;
    trace.status = EvalStatus::RuntimeError;
    trace.log = fmt::format("{}: {}", worker, why);
    done.traces.push_back(std::move(trace));
  }
  return done;
}

std::function<std::unique_ptr<EvaluationPool>(RemotePoolRequest)> redis_pool_factory(
    RedisPoolOptions options) {
  return [options](RemotePoolRequest request) -> std::unique_ptr<EvaluationPool> {
    RedisPoolOptions pool_options = options;
    pool_options.workspace = request.search_flags.workspace;
    return std::make_unique<RedisEvaluationPool>(
        std::move(pool_options), *request.problem, *request.workloads, *request.search,
        request.search_flags, std::move(request.hardware), std::move(request.local));
  };
}

}  // namespace kernelarc
