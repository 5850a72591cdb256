// The evaluations of `optimize --redis`: candidates measured by `kernelarc worker --redis`
// processes on any host, and by this host's own devices beside them. A candidate goes to a free
// local device first, else becomes a job on the queue's stream. Every result, local or remote,
// comes back through this orchestrator's own results stream, where it outlives the orchestrator:
// results that finished while it was down are found again when it resumes and submits the same
// ticket and solution. Each ticket is applied once: a second result for it (a job taken over
// from a worker that was slow rather than dead, both finishing; a job submitted again by a
// resumed run) is dropped with a log line.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "app/guard_session.h"
#include "app/optimize_session.h"
#include "distributed/blob_exchange.h"
#include "distributed/job.h"
#include "optimize/evaluation_pool.h"
#include "optimize/local_pool.h"

namespace kernelarc {

struct RedisPoolOptions {
  std::string url;                    ///< redis://host[:port][/db]
  std::string queue = kDefaultQueue;  ///< the key prefix workers read (`--queue`)
  /// Jobs on the queue at once; 0 = one per worker of the run's device kind seen in the last
  /// ten minutes, at least one.
  std::size_t remote_jobs = 0;
  /// This orchestrator's workspace (its results stream is named after it).
  std::filesystem::path workspace = ".kernelarc";
  /// Lines for the user: duplicates dropped, workers that cannot take a job and why.
  std::function<void(const std::string&)> log;
};

class RedisEvaluationPool : public EvaluationPool {
 public:
  /// Publishes the problem and the draws `search` reads (made here first, where missing).
  /// `search_flags` are the search guard's settings, sent with every job; a worker measures
  /// with the same. `hardware`: the run's device in words, which a worker's must match.
  /// `local`: this host's devices, measuring beside the workers (LocalEvaluationPool's terms).
  RedisEvaluationPool(RedisPoolOptions options, const Problem& problem,
                      std::vector<Workload> workloads, GuardSession& search,
                      const GuardFlags& search_flags, std::string hardware,
                      std::vector<LocalEvaluationPool::Slot> local = {});
  /// Waits for the local evaluations in flight (their results stay on the stream).
  ~RedisEvaluationPool() override;
  RedisEvaluationPool(const RedisEvaluationPool&) = delete;
  RedisEvaluationPool& operator=(const RedisEvaluationPool&) = delete;

  std::size_t capacity() const override { return local_.size() + remote_jobs_; }
  void submit(uint64_t ticket, const Solution& solution) override;
  /// The next finished evaluation; a local evaluator's exception is rethrown here.
  Done next() override;
  std::optional<Done> next_within(std::chrono::milliseconds wait) override;

  /// The results stream this orchestrator reads (for tests and the log).
  const std::string& results_stream() const { return results_; }

 private:
  using Key = std::pair<uint64_t, std::string>;  ///< (ticket, solution hash)
  struct LocalJob {
    uint64_t ticket = 0;
    Solution solution;
    std::string solution_hash;
  };
  struct LocalSlot {
    LocalEvaluationPool::Slot device;
    std::optional<LocalJob> job;  ///< set from submission until its result is posted
    bool running = false;
    std::thread thread;
  };

  std::size_t live_workers(const std::string& kind);
  /// Measures the slot's jobs until the pool stops, posting each result to the stream.
  void serve(LocalSlot& slot);
  /// Reads what arrived on the results stream (blocking up to `block_ms`).
  void read_results(int block_ms);
  void apply(const std::string& entry_id, const std::string& text);
  Done failed(uint64_t ticket, const std::string& worker, const std::string& why) const;

  RedisPoolOptions options_;
  std::vector<Workload> workloads_;
  RedisClient redis_;
  QueueKeys keys_;
  ObjectStore objects_;
  BlobExchange blobs_;
  Job template_;
  std::string results_;
  std::string last_id_ = "0";
  std::size_t remote_jobs_ = 1;
  std::map<uint64_t, std::string> in_flight_;  ///< ticket -> solution hash
  std::set<Key> applied_;
  /// Results read before their ticket was submitted: a previous orchestrator's, for the
  /// tickets a resumed run submits again.
  std::map<Key, Done> finished_early_;
  std::deque<Done> ready_;
  std::set<std::string> refusals_seen_;

  std::mutex mutex_;  ///< guards the slots' jobs, stopping_ and local_error_
  std::condition_variable work_ready_;
  std::deque<LocalSlot> local_;
  bool stopping_ = false;
  std::exception_ptr local_error_;
};

/// The pool of `optimize --redis`, for OptimizeFlags::remote_pool: the session's devices beside
/// the queue's workers, its workspace the orchestrator's.
std::function<std::unique_ptr<EvaluationPool>(RemotePoolRequest)> redis_pool_factory(
    RedisPoolOptions options);

}  // namespace kernelarc
