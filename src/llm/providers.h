// The two wire formats a ChatClient speaks: OpenAI chat completions (also served by vLLM, SGLang,
// llama.cpp server and Ollama) and Anthropic messages. Building a request and reading an answer
// are pure functions of their inputs, so the HTTP client, the response cache and the tests share
// them; only provider_headers() sees the API key.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "llm/chat.h"

namespace kernelarc {

/// "openai" or "anthropic".
bool is_known_provider(std::string_view provider);

/// InputError unless the provider is known and the endpoint and model are set. `where` names
/// the source of the configuration ("llm.json", "flags"), `field` the model within it.
void check_model_config(const ModelConfig& model, std::string_view where, std::string_view field);

/// Where a request goes: "<endpoint>/chat/completions" or "<endpoint>/v1/messages" (a trailing
/// slash of the endpoint is dropped).
std::string provider_url(const ModelConfig& model);

/// The JSON body for the model and request, compact and with a fixed member order so that the
/// same request always gives the same bytes (the response cache hashes them). Text that is not
/// valid UTF-8 is replaced rather than rejected.
std::string provider_request_body(const ModelConfig& model, const ChatRequest& request);

/// The HTTP headers ("Name: value"), with the key in the provider's authentication header
/// when `api_key` is not empty.
std::vector<std::string> provider_headers(const ModelConfig& model, const std::string& api_key);

/// A response body read into a ChatResponse, or why it could not be.
struct ParsedResponse {
  std::optional<ChatResponse> response;
  std::string failure;  ///< "malformed openai response: choices: missing", ...; "" on success
};

/// Reads a 2xx body. Never throws: a body that is not JSON, lacks a field or holds an error
/// object gives a failure.
ParsedResponse parse_provider_response(const std::string& provider, const std::string& body);

/// The server's own words from an error body (OpenAI and Anthropic both put them in
/// error.message), else the body itself; cut to about 500 characters either way.
std::string provider_error_message(const std::string& body);

}  // namespace kernelarc
