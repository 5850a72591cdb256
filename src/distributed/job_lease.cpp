#include "distributed/job_lease.h"

#include <algorithm>

#include <fmt/format.h>

#include "distributed/redis_client.h"

namespace kernelarc {

JobLease::JobLease(std::string url, QueueKeys keys, std::string consumer, std::string id,
                   std::chrono::milliseconds reclaim_after,
                   std::function<void(const std::string&)> log)
    : keys_(std::move(keys)),
      consumer_(std::move(consumer)),
      id_(std::move(id)),
      interval_(
          std::max<std::chrono::milliseconds>(reclaim_after / 4, std::chrono::milliseconds(100))),
      log_(std::move(log)),
      thread_(&JobLease::renew_until_stopped, this, std::move(url)) {}

JobLease::~JobLease() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  stop_signal_.notify_all();
  thread_.join();
}

void JobLease::renew_until_stopped(std::string url) {
  try {
    RedisClient redis(std::move(url));
    std::unique_lock lock(mutex_);
    while (!stop_signal_.wait_for(lock, interval_, [this] { return stop_; })) {
      // Renewed only while this worker still holds it: claiming back a job another worker
      // took over would have two workers renewing one job.
      const RedisReply held =
          redis.command({"XPENDING", keys_.jobs(), kWorkerGroup, id_, id_, "1", consumer_});
      if (held.elements.empty()) {
        log_(
            fmt::format("job {}: another worker took it over; finishing it anyway (the "
                        "orchestrator keeps the first result)",
                        id_));
        return;
      }
      redis.command({"XCLAIM", keys_.jobs(), kWorkerGroup, consumer_, "0", id_, "JUSTID"});
    }
  } catch (const std::exception& error) {
    // The job then goes idle and another worker may take it over: a duplicate at worst.
    log_(fmt::format("job {}: lease not renewed: {}", id_, error.what()));
  }
}

}  // namespace kernelarc
