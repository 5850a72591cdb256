// The ChatClient that talks to a model server over HTTP(S): one request per attempt, retried
// with exponential backoff after a 429, a 5xx or a connection failure or timeout; any other
// status or a malformed answer fails at once. The API key is read from the environment when a
// request is sent and is scrubbed from everything returned.
#pragma once

#include <functional>
#include <optional>

#include "llm/chat.h"

namespace kernelarc {

class HttpChatClient : public ChatClient {
 public:
  /// Waits between attempts (seconds); tests pass one that records the waits instead.
  using Sleeper = std::function<void(double seconds)>;

  HttpChatClient();
  explicit HttpChatClient(Sleeper sleeper);

  /// Safe to call from several threads at once: each call has its own curl handle.
  ChatResult complete(const ModelConfig& model, const ChatRequest& request) override;

 private:
  Sleeper sleeper_;
};

/// The wait before retry `retry` (1 for the first): the server's Retry-After when it sent one,
/// else backoff_s * 2^(retry - 1); never more than 60 s.
double retry_delay_s(const ModelConfig& model, int retry, std::optional<double> retry_after_s);

}  // namespace kernelarc
