#include "codesynth/llm_synthesizer.h"

#include <utility>

#include <fmt/format.h>

#include "codesynth/response_parser.h"
#include "codesynth/synthesized_solution.h"
#include "core/error.h"
#include "llm/pricing.h"

namespace kernelarc {

namespace {

std::string model_label(const ModelConfig& model) {
  return model.name.empty() ? model.model : model.name;
}

std::string exchange_request(const ModelConfig& model, const ChatRequest& chat) {
  OrderedJson json;
  json["model"] = model_label(model);
  json["system"] = chat.system;
  json["messages"] = OrderedJson::array();
  for (const ChatMessage& message : chat.messages)
    json["messages"].push_back({{"role", message.role}, {"content", message.content}});
  return json.dump(2);
}

}  // namespace

LlmSynthesizer::LlmSynthesizer(ChatClient& client,
                               std::function<const ModelConfig&(uint64_t seed)> choose_model,
                               PromptTemplates templates)
    : client_(client), choose_model_(std::move(choose_model)), templates_(std::move(templates)) {}

SynthesisOutcome LlmSynthesizer::synthesize(const SynthesisRequest& request) {
  SynthesisOutcome outcome;
  const ModelConfig& model = choose_model_(request.seed);
  ChatRequest chat = build_prompt(templates_, request);
  chat.sample = request.seed;
  chat.cache_identity = cache_identity(templates_, request);
  SynthesisExchange exchange{exchange_request(model, chat), "", model_label(model)};
  const ChatResult result = client_.complete(model, chat);
  outcome.usage.from_cache = result.from_cache;
  if (result.configuration_error)
    throw InputError(fmt::format(
        "model \"{}\": {}; check its api_key_env, model name and endpoint (the run stops: "
        "every request would fail the same way)",
        model_label(model), result.failure));
  if (!result.response) {
    exchange.response = result.response_body;
    outcome.exchanges.push_back(std::move(exchange));
    outcome.failure = result.failure.empty() ? "the model gave no answer" : result.failure;
    outcome.transport_failure = true;
    return outcome;
  }
  const ChatResponse& response = *result.response;
  exchange.response = response.text;
  outcome.exchanges.push_back(std::move(exchange));
  outcome.usage.input_tokens = response.input_tokens;
  outcome.usage.output_tokens = response.output_tokens;
  // Cached answers are priced as well, so that a replay stops at the same budget.
  outcome.usage.cost_usd = call_cost_usd(model, response.input_tokens, response.output_tokens);
  if (response.truncated) {
    outcome.failure =
        fmt::format("the answer was cut at max_tokens (finish_reason {})", response.finish_reason);
    return outcome;
  }
  const std::vector<SourceFile>* parent_sources =
      request.parent ? &request.parent->solution.sources : nullptr;
  const std::string default_file =
      request.parent ? request.parent->solution.entry_file : default_entry_file(request.device);
  ParsedAnswer answer = parse_answer(response.text, parent_sources, default_file);
  if (!answer.ok()) {
    outcome.failure = answer.failure;
    return outcome;
  }
  try {
    outcome.solution =
        make_synthesized_solution(request, name(), std::move(answer.sources),
                                  {answer.cflags, answer.cuda_cflags, answer.ld_flags});
  } catch (const InputError& error) {
    outcome.failure = error.what();
  }
  return outcome;
}

}  // namespace kernelarc
