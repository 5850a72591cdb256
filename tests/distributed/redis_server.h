// A redis-server for one test: started on a free local port with its files in a scratch folder,
// no persistence, and killed at the end. Where redis-server is not installed the test skips,
// saying so (scripts/install-deps.sh installs it).
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include "distributed/redis_client.h"
#include "local_port.h"

namespace kernelarc::distributed_test {

namespace fs = std::filesystem;

/// The redis-server on PATH, or empty.
inline fs::path find_redis_server() {
  const char* path = std::getenv("PATH");
  std::string_view rest = path ? path : "";
  while (!rest.empty()) {
    const auto colon = rest.find(':');
    const fs::path candidate = fs::path(rest.substr(0, colon)) / "redis-server";
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
    rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
  }
  return {};
}

class RedisServer {
 public:
  /// Starts a server with its files under `dir`; check started() (false: the test skipped or
  /// failed, with the reason reported).
  explicit RedisServer(const fs::path& dir) {
    const fs::path server = find_redis_server();
    if (server.empty()) {
      skip_reason_ = "redis-server is not installed (scripts/install-deps.sh installs it)";
      return;
    }
    fs::create_directories(dir);
    const int port = kernelarc::test_support::free_local_port();
    url_ = "redis://127.0.0.1:" + std::to_string(port);
    pid_ = fork();
    if (pid_ == 0) {
      const std::string log = (dir / "redis.log").string();
      const std::string port_text = std::to_string(port);
      execl(server.c_str(), server.c_str(), "--port", port_text.c_str(), "--bind", "127.0.0.1",
            "--dir", dir.c_str(), "--logfile", log.c_str(), "--save", "", "--appendonly", "no",
            static_cast<char*>(nullptr));
      _exit(127);
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline) {
      try {
        RedisClient(url_).command({"PING"});
        started_ = true;
        return;
      } catch (const RedisError&) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    }
    ADD_FAILURE() << "redis-server did not answer on " << url_ << " within 10 s";
  }
  ~RedisServer() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  bool started() const { return started_; }
  const std::string& skip_reason() const { return skip_reason_; }
  const std::string& url() const { return url_; }

 private:
  pid_t pid_ = -1;
  bool started_ = false;
  std::string skip_reason_;
  std::string url_;
};

/// Starts a server for the test or skips it; use as `START_REDIS(server, dir);`.
#define START_REDIS(server, dir)                                           \
  ::kernelarc::distributed_test::RedisServer server(dir);                  \
  if (!server.skip_reason().empty()) GTEST_SKIP() << server.skip_reason(); \
  ASSERT_TRUE(server.started())

}  // namespace kernelarc::distributed_test
