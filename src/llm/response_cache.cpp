#include "llm/response_cache.h"

#include <atomic>
#include <fstream>

#include <fmt/format.h>
#include <unistd.h>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/hash.h"
#include "core/json_fields.h"
#include "llm/providers.h"

namespace kernelarc {

namespace {

OrderedJson response_json(const ChatResponse& response) {
  return {{"text", response.text},
          {"finish_reason", response.finish_reason},
          {"truncated", response.truncated},
          {"input_tokens", response.input_tokens},
          {"output_tokens", response.output_tokens},
          {"model", response.model}};
}

ChatResponse response_from_json(const OrderedJson& json) {
  ChatResponse response;
  response.text = json.at("text").get<std::string>();
  response.finish_reason = json.at("finish_reason").get<std::string>();
  response.truncated = json.at("truncated").get<bool>();
  response.input_tokens = json.at("input_tokens").get<int64_t>();
  response.output_tokens = json.at("output_tokens").get<int64_t>();
  response.model = json.at("model").get<std::string>();
  return response;
}

}  // namespace

ResponseCache::ResponseCache(std::filesystem::path dir) : dir_(std::move(dir)) {}

std::string ResponseCache::key(const ModelConfig& model, const std::string& request_body,
                               uint64_t sample) {
  return ContentHasher()
      .add("kernelarc-llm-response-v1")
      .add(model.provider)
      .add(model.endpoint)
      .add(model.model)
      .add(fmt::format("{}", model.temperature))
      .add(std::to_string(model.max_tokens))
      .add(request_body)
      .add(std::to_string(sample))
      .hex();
}

std::filesystem::path ResponseCache::path_of(const std::string& key) const {
  return dir_ / (key + ".json");
}

std::optional<ResponseCache::Entry> ResponseCache::find(const std::string& key) const {
  std::ifstream file(path_of(key), std::ios::binary);
  if (!file) return std::nullopt;
  try {
    const OrderedJson entry = OrderedJson::parse(file);
    ChatResult result;
    result.response = response_from_json(entry.at("response"));
    result.request_body = entry.at("request_body").get<std::string>();
    result.response_body = entry.at("response_body").get<std::string>();
    result.from_cache = true;
    std::string identity =
        entry.contains("identity") ? entry.at("identity").get<std::string>() : result.request_body;
    return Entry{std::move(result), std::move(identity)};
  } catch (const OrderedJson::exception&) {
    return std::nullopt;  // a damaged entry is a miss; Record mode writes it anew
  }
}

void ResponseCache::store(const std::string& key, const ModelConfig& model,
                          const ChatResult& result, const std::string& identity) const {
  if (!result.response) return;
  std::error_code error;
  std::filesystem::create_directories(dir_, error);
  if (error) {
    throw InternalError("cannot create the response cache directory " + dir_.string() + ": " +
                        error.message());
  }
  OrderedJson entry = {{"key", key},
                       {"provider", model.provider},
                       {"endpoint", model.endpoint},
                       {"model", model.model},
                       {"temperature", model.temperature},
                       {"max_tokens", model.max_tokens},
                       {"request_body", result.request_body},
                       {"response", response_json(*result.response)},
                       {"response_body", result.response_body}};
  if (!identity.empty()) entry["identity"] = identity;
  write_file_atomically(path_of(key),
                        entry.dump(2, ' ', false, OrderedJson::error_handler_t::replace) + "\n");
}

CachingChatClient::CachingChatClient(std::unique_ptr<ChatClient> inner, std::filesystem::path dir,
                                     CacheMode mode)
    : inner_(std::move(inner)), cache_(std::move(dir)), mode_(mode) {
  if (!inner_ && mode_ == CacheMode::Record)
    throw InternalError("CachingChatClient: Record mode needs a client to call the model");
}

ChatResult CachingChatClient::complete(const ModelConfig& model, const ChatRequest& request) {
  check_model_config(model, fmt::format("model \"{}\"", model.name), "");
  const std::string body = provider_request_body(model, request);
  const std::string& identity = request.cache_identity.empty() ? body : request.cache_identity;
  const std::string key = ResponseCache::key(model, identity, request.sample);
  // The comparison guards against an entry edited by hand under another request's name.
  if (std::optional<ResponseCache::Entry> hit = cache_.find(key); hit && hit->identity == identity)
    return std::move(hit->result);
  if (mode_ == CacheMode::Replay) {
    ChatResult miss;
    miss.request_body = body;
    miss.failure =
        fmt::format("not in the replay cache ({}): run without --llm-replay to call the model",
                    cache_.dir().string());
    return miss;
  }
  ChatResult result = inner_->complete(model, request);
  result.request_body = body;  // what the key was made from, whatever the inner client kept
  cache_.store(key, model, result, request.cache_identity);
  return result;
}

}  // namespace kernelarc
