// The connection of a build without hiredis: everything else of the queue builds, and asking for
// a server says what to install.
#include <fmt/format.h>

#include "distributed/redis_client.h"

namespace kernelarc {

struct RedisClient::Connection {};

RedisClient::RedisClient(std::string url, std::chrono::milliseconds) : url_(std::move(url)) {
  throw InputError(
      fmt::format("redis {}: this kernelarc was built without hiredis; install libhiredis-dev "
                  "(scripts/install-deps.sh) and rebuild",
                  url_));
}

RedisClient::~RedisClient() = default;
RedisClient::RedisClient(RedisClient&&) noexcept = default;
RedisClient& RedisClient::operator=(RedisClient&&) noexcept = default;

RedisReply RedisClient::command(const std::vector<std::string>&) {
  throw InputError(fmt::format("redis {}: this kernelarc was built without hiredis", url_));
}

}  // namespace kernelarc
