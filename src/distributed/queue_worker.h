// `kernelarc worker --redis URL --device cpu|cuda:N`: takes build-and-measure jobs from the
// queue's stream with the "workers" consumer group, measures each through the guard on its
// device, writes the result to the orchestrator's results stream and acknowledges the job in
// one transaction. Between jobs it takes over jobs of dead workers (XAUTOCLAIM, idle beyond
// `reclaim_after`). A job for another kind of device goes back to the queue for another worker,
// and the orchestrator hears why.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <string>

#include "distributed/queue_keys.h"

namespace kernelarc {

struct QueueWorkerOptions {
  std::string url;
  std::string queue = kDefaultQueue;
  std::string device = "cpu";  ///< "cpu" or "cuda:N"
  /// The worker's own workspace: fetched blobs, materialized problems, the oracle's draws, the
  /// build cache and this device's calibration.
  std::filesystem::path workspace = ".kernelarc";
  std::string python;  ///< the interpreter, should a draw be missing from a job's bundle
  /// A job nobody renewed for this long belongs to a dead worker and is taken over. Longer
  /// than a stall of a live host (its lease renews every quarter of it), shorter than the
  /// wait one is willing to lose to a dead one. Default 60 s.
  std::chrono::milliseconds reclaim_after{60'000};
  /// How long a read for new jobs blocks before looking for jobs to take over again.
  std::chrono::milliseconds poll{2'000};
  std::function<void(const std::string&)> log;
};

/// Serves jobs until the process is stopped; returns only by throwing (a lost server).
[[noreturn]] void run_queue_worker(QueueWorkerOptions options);

}  // namespace kernelarc
