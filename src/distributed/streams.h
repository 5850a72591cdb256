// The few Redis Streams replies the queue reads, as values.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "distributed/job.h"
#include "distributed/queue_keys.h"
#include "distributed/redis_client.h"

namespace kernelarc {

struct StreamEntry {
  std::string id;
  std::map<std::string, std::string> fields;
};

/// The entries of an XRANGE-like array ([id, [field, value, ...]], ...); a deleted entry that
/// XAUTOCLAIM reports as nil is left out.
std::vector<StreamEntry> stream_entries(const RedisReply& array);
/// The entries of an XREAD / XREADGROUP reply over one stream (none when it timed out).
std::vector<StreamEntry> read_entries(const RedisReply& reply);

/// Creates the workers' consumer group on the jobs stream (and the stream) unless it exists.
/// It starts at the stream's beginning, so jobs added before any worker came are not skipped.
void ensure_worker_group(RedisClient& redis, const QueueKeys& keys);

/// Appends a result to an orchestrator's results stream, which then expires a week after its last
/// result (kQueueExpirySeconds). Two commands: inside MULTI, one transaction with the caller's.
void add_result(RedisClient& redis, const std::string& stream, const JobResult& result);

}  // namespace kernelarc
