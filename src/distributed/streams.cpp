#include "distributed/streams.h"

namespace kernelarc {

std::vector<StreamEntry> stream_entries(const RedisReply& array) {
  std::vector<StreamEntry> entries;
  for (const RedisReply& item : array.elements) {
    if (item.elements.size() != 2) continue;
    StreamEntry entry{item.elements[0].text, {}};
    const auto& fields = item.elements[1].elements;
    for (std::size_t i = 0; i + 1 < fields.size(); i += 2)
      entry.fields[fields[i].text] = fields[i + 1].text;
    entries.push_back(std::move(entry));
  }
  return entries;
}

std::vector<StreamEntry> read_entries(const RedisReply& reply) {
  if (reply.is_nil() || reply.elements.empty() || reply.elements[0].elements.size() != 2) return {};
  return stream_entries(reply.elements[0].elements[1]);
}

void ensure_worker_group(RedisClient& redis, const QueueKeys& keys) {
  try {
    redis.command({"XGROUP", "CREATE", keys.jobs(), kWorkerGroup, "0", "MKSTREAM"});
  } catch (const RedisError& error) {
    if (std::string_view(error.what()).find("BUSYGROUP") == std::string_view::npos) throw;
  }
}

void add_result(RedisClient& redis, const std::string& stream, const JobResult& result) {
  redis.command({"XADD", stream, "*", "result", result_to_json(result)});
  redis.command({"EXPIRE", stream, std::to_string(kQueueExpirySeconds)});
}

}  // namespace kernelarc
