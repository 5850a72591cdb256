// What the code synthesizers need from a language model: one chat completion at a time, with the
// model chosen from the run's configuration. Transport (HTTP, retries), wire formats (OpenAI chat
// completions, Anthropic messages) and the response cache live behind ChatClient.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kernelarc {

/// One model endpoint of the configuration (an ensemble holds several, with weights).
struct ModelConfig {
  std::string name;      ///< label in records and summaries; default "<model>@<provider>"
  std::string provider;  ///< "openai" (chat completions: OpenAI, vLLM, SGLang, llama.cpp, Ollama)
                         ///< or "anthropic" (messages)
  std::string endpoint;  ///< base URL: "https://api.openai.com/v1", "http://127.0.0.1:8000/v1",
                         ///< "https://api.anthropic.com"; the provider's path is appended
  std::string model;
  /// The environment variable that holds the API key; empty = no key. The key itself is read
  /// when a request is sent and is never stored, logged or put in an error message.
  std::string api_key_env;
  double weight = 1.0;  ///< relative odds of being chosen for a call
  double temperature = 0.7;
  int max_tokens = 4096;
  double timeout_s = 120;  ///< one HTTP attempt, connection included
  int retries = 4;         ///< further attempts after a 429, a 5xx or a connection failure
  double backoff_s = 1.0;  ///< wait before the first retry; doubles each time (Retry-After wins)
  double price_input_per_mtok = 0;   ///< USD per million input tokens
  double price_output_per_mtok = 0;  ///< USD per million output tokens
};

struct ChatMessage {
  std::string role;  ///< "user" or "assistant"
  std::string content;
};

struct ChatRequest {
  std::string system;
  std::vector<ChatMessage> messages;
  /// Tells repeated samples of one prompt apart in the response cache (not sent): a run that
  /// asks the same question twice wants two answers, and a replay with the same seed gets each.
  uint64_t sample = 0;
  /// What the response cache keys on instead of the request body, when set (not sent): the
  /// prompt with what differs from run to run of the same search masked (measured times,
  /// calibrated figures), so that a replay of the search finds every answer.
  std::string cache_identity;
};

struct ChatResponse {
  std::string text;           ///< the assistant's message
  std::string finish_reason;  ///< as the provider said it ("stop", "length", "end_turn", ...)
  bool truncated = false;     ///< cut at max_tokens ("length" / "max_tokens")
  int64_t input_tokens = 0;   ///< from the response's usage; 0 when it had none
  int64_t output_tokens = 0;
  std::string model;  ///< the model the server says answered
};

struct ChatResult {
  std::optional<ChatResponse> response;
  /// Why there is no response (HTTP status and the server's message, curl's error, "not in
  /// the replay cache"); empty exactly when `response` is set. Never contains the API key.
  std::string failure;
  int attempts = 0;
  std::string request_body;   ///< the JSON sent (no key: keys travel in headers)
  std::string response_body;  ///< the last body received, "" when none
  bool from_cache = false;
  /// The server refused the configuration itself (401, 403: the key; 404: the model or the
  /// endpoint's path): every further request would fail the same way, so the run stops.
  bool configuration_error = false;
};

class ChatClient {
 public:
  virtual ~ChatClient() = default;
  /// Never throws for what the server or the network did; InputError only for an unusable
  /// configuration (unknown provider, empty endpoint or model).
  virtual ChatResult complete(const ModelConfig& model, const ChatRequest& request) = 0;
};

}  // namespace kernelarc
