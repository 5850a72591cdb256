// A model server for the tests: an httplib::Server on 127.0.0.1 (any free port) that answers
// each POST with the next scripted reply and records what it received, and a port that refuses
// connections, for the dead-server cases.
#pragma once

#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace kernelarc::testing {

/// Sends the tests' requests for 127.0.0.1 straight there, even where http_proxy is set.
inline void bypass_proxies() {
  ::setenv("no_proxy", "127.0.0.1,localhost", 1);
  ::setenv("NO_PROXY", "127.0.0.1,localhost", 1);
}

struct ScriptedReply {
  int status = 200;
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  double delay_s = 0;  ///< wait before answering (cut short when the server stops)
};

struct ReceivedRequest {
  std::string path;
  std::string body;
  httplib::Headers headers;

  std::string header(const std::string& name) const {
    const auto found = headers.find(name);
    return found == headers.end() ? "" : found->second;
  }
};

class FakeModelServer {
 public:
  FakeModelServer() {
    bypass_proxies();
    port_ = server_.bind_to_any_port("127.0.0.1");
    server_.Post(".*", [this](const httplib::Request& request, httplib::Response& response) {
      answer(request, response);
    });
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    // stop() is a no-op until the server runs: a server stopped sooner would never stop.
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~FakeModelServer() {
    stopping_ = true;
    server_.stop();
    thread_.join();
  }
  FakeModelServer(const FakeModelServer&) = delete;
  FakeModelServer& operator=(const FakeModelServer&) = delete;

  /// Queues the replies, answered in order; a request beyond them gets a 599.
  void script(std::vector<ScriptedReply> replies) {
    const std::lock_guard lock(mutex_);
    for (ScriptedReply& reply : replies) replies_.push_back(std::move(reply));
  }
  std::vector<ReceivedRequest> requests() const {
    const std::lock_guard lock(mutex_);
    return received_;
  }
  /// "http://127.0.0.1:<port>" followed by `path`.
  std::string endpoint(const std::string& path = "") const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }

 private:
  void answer(const httplib::Request& request, httplib::Response& response) {
    ScriptedReply reply{599, R"({"error":{"message":"no scripted reply left"}})", {}, 0};
    {
      const std::lock_guard lock(mutex_);
      received_.push_back({request.path, request.body, request.headers});
      if (!replies_.empty()) {
        reply = std::move(replies_.front());
        replies_.pop_front();
      }
    }
    const auto until =
        std::chrono::steady_clock::now() + std::chrono::duration<double>(reply.delay_s);
    while (!stopping_ && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    response.status = reply.status;
    for (const auto& [name, value] : reply.headers) response.set_header(name, value);
    response.set_content(reply.body, "application/json");
  }

  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  mutable std::mutex mutex_;
  std::deque<ScriptedReply> replies_;
  std::vector<ReceivedRequest> received_;
};

/// A port on 127.0.0.1 that is bound but never listened on: connecting is refused, and no
/// other process can take the port while this object lives.
class DeadPort {
 public:
  DeadPort() {
    bypass_proxies();
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address);
    socklen_t length = sizeof address;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length);
    port_ = ntohs(address.sin_port);
  }
  ~DeadPort() { ::close(fd_); }
  DeadPort(const DeadPort&) = delete;
  DeadPort& operator=(const DeadPort&) = delete;

  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  int fd_ = -1;
  int port_ = 0;
};

/// Bodies in the two wire formats.
inline std::string openai_answer(const std::string& text, const std::string& finish_reason = "stop",
                                 int prompt_tokens = 11, int completion_tokens = 7) {
  const nlohmann::json message = {{"role", "assistant"}, {"content", text}};
  return nlohmann::json{
      {"id", "chatcmpl-1"},
      {"object", "chat.completion"},
      {"model", "gpt-test"},
      {"choices", {{{"index", 0}, {"message", message}, {"finish_reason", finish_reason}}}},
      {"usage", {{"prompt_tokens", prompt_tokens}, {"completion_tokens", completion_tokens}}}}
      .dump();
}

inline std::string anthropic_answer(const std::vector<std::string>& texts,
                                    const std::string& stop_reason = "end_turn",
                                    int input_tokens = 13, int output_tokens = 5) {
  nlohmann::json content = nlohmann::json::array();
  for (const std::string& text : texts) content.push_back({{"type", "text"}, {"text", text}});
  return nlohmann::json{
      {"id", "msg_1"},
      {"type", "message"},
      {"role", "assistant"},
      {"model", "claude-test"},
      {"content", content},
      {"stop_reason", stop_reason},
      {"usage", {{"input_tokens", input_tokens}, {"output_tokens", output_tokens}}}}
      .dump();
}

}  // namespace kernelarc::testing
