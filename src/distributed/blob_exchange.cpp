#include "distributed/blob_exchange.h"

#include <fmt/format.h>

#include "core/hash.h"

namespace kernelarc {

BlobExchange::BlobExchange(RedisClient& redis, QueueKeys keys, ObjectStore& cache)
    : redis_(&redis), keys_(std::move(keys)), cache_(&cache) {}

std::string BlobExchange::put(std::string_view bytes) {
  const std::string hash = content_hash(bytes);
  const std::string key = keys_.blob(hash);
  // NX: a blob is immutable, so one already there is the same bytes; its expiry is renewed.
  redis_->command({"SET", key, std::string(bytes), "NX"});
  redis_->command({"EXPIRE", key, std::to_string(kQueueExpirySeconds)});
  return hash;
}

std::string BlobExchange::get(const std::string& hash) {
  if (cache_->has(hash)) return cache_->get(hash);
  const std::string key = keys_.blob(hash);
  const RedisReply reply = redis_->command({"GET", key});
  if (reply.is_nil())
    throw InternalError(
        fmt::format("redis {}: blob {} is missing (expired, or the server lost "
                    "it)",
                    redis_->url(), key));
  if (content_hash(reply.text) != hash)
    throw InternalError(
        fmt::format("redis {}: blob {} does not match its hash", redis_->url(), key));
  cache_->put(reply.text);
  return reply.text;
}

}  // namespace kernelarc
