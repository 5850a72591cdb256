#include "llm/providers.h"

#include <stdexcept>

#include <fmt/format.h>

#include "core/error.h"
#include "core/json_fields.h"

namespace kernelarc {

namespace {

constexpr std::size_t kErrorMessageLimit = 500;

// A body that does not have the shape of the provider's answer; caught in
// parse_provider_response, never thrown past it.
class MalformedResponse : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

[[noreturn]] void malformed(std::string_view path, std::string_view problem) {
  throw MalformedResponse(fmt::format("{}: {}", path, problem));
}

const OrderedJson& member(const OrderedJson& object, std::string_view key, std::string_view path) {
  if (!object.is_object()) malformed(path, "expected object, got " + describe_json(object));
  const OrderedJson* found = find_member(object, key);
  if (found == nullptr) malformed(field_path(path, key), "missing");
  return *found;
}

std::string text_of(const OrderedJson& value, std::string_view path) {
  if (!value.is_string()) malformed(path, "expected string, got " + describe_json(value));
  return value.get<std::string>();
}

// A string that may be absent or null (finish reasons, the model name).
std::string optional_text(const OrderedJson& object, std::string_view key, std::string_view path) {
  const OrderedJson* found = find_member(object, key);
  if (found == nullptr || found->is_null()) return "";
  return text_of(*found, field_path(path, key));
}

// A token count that may be absent (servers without usage report nothing).
int64_t optional_count(const OrderedJson* usage, std::string_view key) {
  if (usage == nullptr || usage->is_null()) return 0;
  if (!usage->is_object()) malformed("usage", "expected object, got " + describe_json(*usage));
  const OrderedJson* found = find_member(*usage, key);
  if (found == nullptr || found->is_null()) return 0;
  if (!found->is_number_integer() || found->get<int64_t>() < 0) {
    malformed(field_path("usage", key),
              "expected a non-negative integer, got " + describe_json(*found));
  }
  return found->get<int64_t>();
}

ChatResponse parse_openai(const OrderedJson& root) {
  const OrderedJson& choices = member(root, "choices", "");
  if (!choices.is_array() || choices.empty()) {
    malformed("choices", "expected a non-empty array, got " + describe_json(choices));
  }
  const OrderedJson& message = member(choices[0], "message", "choices[0]");
  ChatResponse response;
  response.text =
      text_of(member(message, "content", "choices[0].message"), "choices[0].message.content");
  response.finish_reason = optional_text(choices[0], "finish_reason", "choices[0]");
  response.truncated = response.finish_reason == "length";
  const OrderedJson* usage = find_member(root, "usage");
  response.input_tokens = optional_count(usage, "prompt_tokens");
  response.output_tokens = optional_count(usage, "completion_tokens");
  response.model = optional_text(root, "model", "");
  return response;
}

ChatResponse parse_anthropic(const OrderedJson& root) {
  const OrderedJson& content = member(root, "content", "");
  if (!content.is_array()) malformed("content", "expected array, got " + describe_json(content));
  ChatResponse response;
  for (std::size_t index = 0; index < content.size(); ++index) {
    const std::string path = field_index("content", index);
    if (text_of(member(content[index], "type", path), path + ".type") != "text") continue;
    response.text += text_of(member(content[index], "text", path), path + ".text");
  }
  response.finish_reason = optional_text(root, "stop_reason", "");
  response.truncated = response.finish_reason == "max_tokens";
  const OrderedJson* usage = find_member(root, "usage");
  response.input_tokens = optional_count(usage, "input_tokens");
  response.output_tokens = optional_count(usage, "output_tokens");
  response.model = optional_text(root, "model", "");
  return response;
}

// Cut at a character boundary: a UTF-8 continuation byte never starts the cut-off part.
std::string shorten(std::string text) {
  if (text.size() <= kErrorMessageLimit) return text;
  std::size_t cut = kErrorMessageLimit;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  text.resize(cut);
  return text + "...";
}

OrderedJson message_json(std::string_view role, const std::string& content) {
  return OrderedJson{{"role", role}, {"content", content}};
}

}  // namespace

bool is_known_provider(std::string_view provider) {
  return provider == "openai" || provider == "anthropic";
}

void check_model_config(const ModelConfig& model, std::string_view where, std::string_view field) {
  if (!is_known_provider(model.provider)) {
    throw_input_error(
        where, field_path(field, "provider"),
        fmt::format("expected \"openai\" or \"anthropic\", got \"{}\"", model.provider));
  }
  if (model.endpoint.empty())
    throw_input_error(where, field_path(field, "endpoint"), "must not be empty");
  if (model.model.empty())
    throw_input_error(where, field_path(field, "model"), "must not be empty");
}

std::string provider_url(const ModelConfig& model) {
  std::string_view base = model.endpoint;
  while (base.ends_with('/')) base.remove_suffix(1);
  const char* path = model.provider == "anthropic" ? "/v1/messages" : "/chat/completions";
  return std::string(base) + path;
}

std::string provider_request_body(const ModelConfig& model, const ChatRequest& request) {
  OrderedJson messages = OrderedJson::array();
  const bool anthropic = model.provider == "anthropic";
  if (!anthropic && !request.system.empty())
    messages.push_back(message_json("system", request.system));
  for (const ChatMessage& message : request.messages)
    messages.push_back(message_json(message.role, message.content));
  OrderedJson body = {
      {"model", model.model}, {"max_tokens", model.max_tokens}, {"temperature", model.temperature}};
  if (anthropic && !request.system.empty()) body["system"] = request.system;
  body["messages"] = std::move(messages);
  // Prompts carry compiler logs, which may hold bytes that are not UTF-8.
  return body.dump(-1, ' ', false, OrderedJson::error_handler_t::replace);
}

std::vector<std::string> provider_headers(const ModelConfig& model, const std::string& api_key) {
  std::vector<std::string> headers = {"Content-Type: application/json"};
  if (model.provider == "anthropic") {
    headers.push_back("anthropic-version: 2023-06-01");
    if (!api_key.empty()) headers.push_back("x-api-key: " + api_key);
  } else if (!api_key.empty()) {
    headers.push_back("Authorization: Bearer " + api_key);
  }
  return headers;
}

ParsedResponse parse_provider_response(const std::string& provider, const std::string& body) {
  const std::string prefix = fmt::format("malformed {} response: ", provider);
  OrderedJson root;
  try {
    root = OrderedJson::parse(body);
  } catch (const OrderedJson::parse_error& error) {
    return {std::nullopt, prefix + "not JSON (" + json_error_text(error) + ")"};
  }
  if (!root.is_object())
    return {std::nullopt, prefix + "expected a JSON object, got " + describe_json(root)};
  const OrderedJson* error = find_member(root, "error");
  if (error != nullptr && !error->is_null())
    return {std::nullopt, "the server answered with an error: " + provider_error_message(body)};
  try {
    return {provider == "anthropic" ? parse_anthropic(root) : parse_openai(root), ""};
  } catch (const MalformedResponse& malformed_response) {
    return {std::nullopt, prefix + malformed_response.what()};
  } catch (const std::exception& unexpected) {
    return {std::nullopt, prefix + json_error_text(unexpected)};
  }
}

std::string provider_error_message(const std::string& body) {
  try {
    const OrderedJson root = OrderedJson::parse(body);
    const OrderedJson* error = root.is_object() ? find_member(root, "error") : nullptr;
    if (error != nullptr && error->is_string()) return shorten(error->get<std::string>());
    const OrderedJson* message =
        error != nullptr && error->is_object() ? find_member(*error, "message") : nullptr;
    if (message != nullptr && message->is_string()) return shorten(message->get<std::string>());
  } catch (const OrderedJson::exception&) {
    // Not JSON (a proxy's HTML page, plain text): the body speaks for itself.
  }
  return shorten(body);
}

}  // namespace kernelarc
