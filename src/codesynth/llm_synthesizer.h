// The LLM synthesizer: one chat completion per candidate. It builds the prompt for the request's
// move, asks the model the run's configuration picks for the request's seed, and turns the
// answer into a solution (whole files or edits of the parent, see response_parser.h). Whatever
// the model or the transport did, it returns an outcome with the exchange recorded; only an
// unusable configuration throws (including one the server refuses: 401, 403, 404).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "codesynth/code_synthesizer.h"
#include "codesynth/prompt_builder.h"
#include "llm/chat.h"

namespace kernelarc {

class LlmSynthesizer : public CodeSynthesizer {
 public:
  /// `choose_model` maps a request's seed to a model of the ensemble; the reference it returns
  /// must stay valid while the synthesizer is used. `client` must outlive the synthesizer.
  LlmSynthesizer(ChatClient& client, std::function<const ModelConfig&(uint64_t seed)> choose_model,
                 PromptTemplates templates);

  std::string name() const override { return "llm"; }
  /// The exchange's request is {"model", "system", "messages"} as JSON; its response is the
  /// model's text (the last body received when there was no answer). Token counts and
  /// from_cache come from the client; cost_usd is the model's list price for them (cached answers
  /// included, so that a replay stops at the same budget).
  SynthesisOutcome synthesize(const SynthesisRequest& request) override;

 private:
  ChatClient& client_;
  std::function<const ModelConfig&(uint64_t seed)> choose_model_;
  PromptTemplates templates_;
};

}  // namespace kernelarc
