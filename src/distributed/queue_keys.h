// The Redis keys of one work queue (`--queue`, default "kernelarc"): every orchestrator and
// worker that names the same server and queue shares them.
//
//   <queue>:jobs              stream of build-and-measure jobs; consumer group "workers"
//   <queue>:results:<token>   stream of one orchestrator's results (the job names it)
//   <queue>:blob:<hash>       a blob by content hash (problem files, oracle draws, sources)
//   <queue>:workers           hash: worker name -> {device, kind, seen} (who can take what)
#pragma once

#include <string>
#include <string_view>

namespace kernelarc {

inline constexpr const char* kDefaultQueue = "kernelarc";
inline constexpr const char* kWorkerGroup = "workers";
/// Raised when a job or a result changes shape; a worker refuses a job of another version.
inline constexpr int kQueueProtocol = 1;
/// Results, blobs and the worker registry expire a week after their last write, so a queue
/// nobody uses any more empties itself.
inline constexpr int kQueueExpirySeconds = 7 * 24 * 3600;

struct QueueKeys {
  std::string queue = kDefaultQueue;

  std::string jobs() const { return queue + ":jobs"; }
  std::string results(std::string_view token) const {
    return queue + ":results:" + std::string(token);
  }
  std::string blob(std::string_view hash) const { return queue + ":blob:" + std::string(hash); }
  std::string workers() const { return queue + ":workers"; }
};

}  // namespace kernelarc
