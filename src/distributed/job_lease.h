// A worker's hold on the job it measures. Another worker takes a job over (XAUTOCLAIM) once it
// has been idle for `reclaim_after`; the holder keeps it from going idle by claiming it to
// itself again (XCLAIM ... JUSTID resets the idle time) every quarter of that, on a thread and
// connection of its own, so a long guard run does not look like a dead worker. A worker that
// dies stops renewing, and its job goes to another after `reclaim_after`. A live worker stalled
// beyond it (a suspended VM) can lose the job: both then finish it, and the orchestrator applies
// the first result and drops the other (redis_evaluation_pool.h).
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "distributed/queue_keys.h"

namespace kernelarc {

class JobLease {
 public:
  /// Starts renewing entry `id` of the jobs stream for `consumer`. `log` hears a lease lost.
  JobLease(std::string url, QueueKeys keys, std::string consumer, std::string id,
           std::chrono::milliseconds reclaim_after, std::function<void(const std::string&)> log);
  /// Stops renewing (the job is acknowledged or given back by then).
  ~JobLease();
  JobLease(const JobLease&) = delete;
  JobLease& operator=(const JobLease&) = delete;

 private:
  void renew_until_stopped(std::string url);

  QueueKeys keys_;
  std::string consumer_;
  std::string id_;
  std::chrono::milliseconds interval_;
  std::function<void(const std::string&)> log_;
  std::mutex mutex_;
  std::condition_variable stop_signal_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace kernelarc
