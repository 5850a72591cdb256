#include "llm/http_chat_client.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <thread>

#include <fmt/format.h>

#include "llm/http_post.h"
#include "llm/providers.h"

namespace kernelarc {

namespace {

constexpr double kMaxRetryDelayS = 60;

void sleep_for_seconds(double seconds) {
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
}

// Servers echo keys back ("Incorrect API key provided: sk-..."); nothing returned may hold one.
std::string redact(std::string text, const std::string& secret) {
  if (secret.empty()) return text;
  for (auto found = text.find(secret); found != std::string::npos;
       found = text.find(secret, found)) {
    text.replace(found, secret.size(), "[api key]");
  }
  return text;
}

// What one attempt came to when it gave no response.
struct AttemptFailure {
  std::string reason;
  bool retryable = false;
};

AttemptFailure classify(const HttpReply& reply, const std::string& url) {
  if (!reply.transport_error.empty())
    return {fmt::format("cannot reach {}: {}", url, reply.transport_error), true};
  return {fmt::format("HTTP {} from {}: {}", reply.status, url, provider_error_message(reply.body)),
          reply.status == 429 || reply.status >= 500};
}

}  // namespace

HttpChatClient::HttpChatClient() : HttpChatClient(sleep_for_seconds) {}

HttpChatClient::HttpChatClient(Sleeper sleeper) : sleeper_(std::move(sleeper)) {}

double retry_delay_s(const ModelConfig& model, int retry, std::optional<double> retry_after_s) {
  const double delay =
      retry_after_s ? *retry_after_s : model.backoff_s * std::ldexp(1.0, retry - 1);
  return std::clamp(delay, 0.0, kMaxRetryDelayS);
}

ChatResult HttpChatClient::complete(const ModelConfig& model, const ChatRequest& request) {
  check_model_config(model, fmt::format("model \"{}\"", model.name), "");
  ChatResult result;
  result.request_body = provider_request_body(model, request);
  std::string api_key;
  if (!model.api_key_env.empty()) {
    const char* value = std::getenv(model.api_key_env.c_str());
    if (value == nullptr || *value == '\0') {
      result.failure = fmt::format(
          "the environment variable {} (api_key_env of model \"{}\") is not set or empty",
          model.api_key_env, model.name);
      return result;
    }
    api_key = value;
  }
  const std::string url = provider_url(model);
  const std::vector<std::string> headers = provider_headers(model, api_key);
  for (int attempt = 1;; ++attempt) {
    result.attempts = attempt;
    const HttpReply reply = http_post(url, headers, result.request_body, model.timeout_s);
    result.response_body = redact(reply.body, api_key);
    if (reply.transport_error.empty() && reply.status >= 200 && reply.status < 300) {
      ParsedResponse parsed = parse_provider_response(model.provider, result.response_body);
      result.response = std::move(parsed.response);
      result.failure = redact(std::move(parsed.failure), api_key);
      return result;
    }
    const AttemptFailure failure = classify(reply, url);
    result.failure = redact(failure.reason, api_key);
    result.configuration_error =
        reply.transport_error.empty() &&
        (reply.status == 401 || reply.status == 403 || reply.status == 404);
    if (!failure.retryable) return result;
    if (attempt > model.retries) {
      result.failure = fmt::format("gave up after {} attempt{}: {}", attempt,
                                   attempt == 1 ? "" : "s", result.failure);
      return result;
    }
    sleeper_(retry_delay_s(model, attempt, reply.retry_after_s));
  }
}

}  // namespace kernelarc
