#include "distributed/redis_client.h"

#include <hiredis/hiredis.h>
#include <sys/time.h>

#include <fmt/format.h>

namespace kernelarc {

namespace {

struct ContextFree {
  void operator()(redisContext* context) const { redisFree(context); }
};
struct ReplyFree {
  void operator()(redisReply* reply) const { freeReplyObject(reply); }
};

timeval to_timeval(std::chrono::milliseconds timeout) {
  return {static_cast<time_t>(timeout.count() / 1000),
          static_cast<suseconds_t>(timeout.count() % 1000 * 1000)};
}

RedisReply copy_reply(const redisReply& reply, const std::string& url, const std::string& what) {
  RedisReply copy;
  switch (reply.type) {
    case REDIS_REPLY_ERROR:
      throw RedisError(
          fmt::format("redis {}: {}: {}", url, what, std::string(reply.str, reply.len)));
    case REDIS_REPLY_INTEGER:
      copy.type = RedisReply::Type::Integer;
      copy.integer = reply.integer;
      break;
    case REDIS_REPLY_STRING:
    case REDIS_REPLY_STATUS:
      copy.type =
          reply.type == REDIS_REPLY_STRING ? RedisReply::Type::String : RedisReply::Type::Status;
      copy.text.assign(reply.str, reply.len);
      break;
    case REDIS_REPLY_ARRAY:
      copy.type = RedisReply::Type::Array;
      for (size_t i = 0; i < reply.elements; ++i)
        copy.elements.push_back(copy_reply(*reply.element[i], url, what));
      break;
    default:
      break;  // nil
  }
  return copy;
}

}  // namespace

struct RedisClient::Connection {
  std::unique_ptr<redisContext, ContextFree> context;
};

RedisClient::RedisClient(std::string url, std::chrono::milliseconds timeout)
    : url_(std::move(url)), connection_(std::make_unique<Connection>()) {
  const RedisAddress address = parse_redis_url(url_);
  const timeval limit = to_timeval(timeout);
  connection_->context.reset(
      address.socket_path.empty()
          ? redisConnectWithTimeout(address.host.c_str(), address.port, limit)
          : redisConnectUnixWithTimeout(address.socket_path.c_str(), limit));
  redisContext* context = connection_->context.get();
  if (context == nullptr) throw RedisError(fmt::format("redis {}: out of memory", url_));
  if (context->err)
    throw RedisError(fmt::format("redis {}: cannot connect: {}", url_, context->errstr));
  redisSetTimeout(context, limit);
  if (address.database != 0) command({"SELECT", std::to_string(address.database)});
}

RedisClient::~RedisClient() = default;
RedisClient::RedisClient(RedisClient&&) noexcept = default;
RedisClient& RedisClient::operator=(RedisClient&&) noexcept = default;

RedisReply RedisClient::command(const std::vector<std::string>& args) {
  std::vector<const char*> argv;
  std::vector<size_t> lengths;
  for (const std::string& arg : args) {
    argv.push_back(arg.data());
    lengths.push_back(arg.size());
  }
  redisContext* context = connection_->context.get();
  const std::string what = args.empty() ? std::string("(no command)") : args.front();
  std::unique_ptr<redisReply, ReplyFree> reply(static_cast<redisReply*>(
      redisCommandArgv(context, static_cast<int>(argv.size()), argv.data(), lengths.data())));
  // hiredis leaves a context unusable after an I/O error: every later command fails the same way.
  if (!reply) throw RedisError(fmt::format("redis {}: {}: {}", url_, what, context->errstr));
  return copy_reply(*reply, url_, what);
}

}  // namespace kernelarc
