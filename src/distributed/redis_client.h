// A connection to one Redis server (hiredis underneath), owned by one thread. Commands are
// argument vectors, binary-safe, and come back as a typed copy of the reply. A server that
// cannot be reached, a dropped connection and an error reply throw RedisError naming the URL
// and the command, so that a worker or an orchestrator says which server failed it.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"

namespace kernelarc {

class RedisError : public InternalError {
 public:
  using InternalError::InternalError;
};

struct RedisReply {
  enum class Type { Nil, Integer, String, Status, Array };
  Type type = Type::Nil;
  long long integer = 0;
  std::string text;  ///< String or Status
  std::vector<RedisReply> elements;

  bool is_nil() const { return type == Type::Nil; }
};

/// Where a server listens: "redis://host[:port][/db]" (port 6379, db 0 by default) or
/// "unix:///path/to/socket[?db=N]". InputError naming the URL for anything else.
struct RedisAddress {
  std::string host;  ///< empty for a Unix socket
  int port = 6379;
  std::string socket_path;
  int database = 0;
};
RedisAddress parse_redis_url(const std::string& url);

class RedisClient {
 public:
  /// Connects (and SELECTs the URL's database). `timeout` bounds the connection and every
  /// command; a blocking read (XREAD BLOCK) must block for less.
  explicit RedisClient(std::string url,
                       std::chrono::milliseconds timeout = std::chrono::seconds(30));
  ~RedisClient();
  RedisClient(RedisClient&&) noexcept;
  RedisClient& operator=(RedisClient&&) noexcept;

  /// Runs one command; an error reply is a RedisError with the server's message.
  RedisReply command(const std::vector<std::string>& args);
  const std::string& url() const { return url_; }

 private:
  struct Connection;
  std::string url_;
  std::unique_ptr<Connection> connection_;
};

}  // namespace kernelarc
