// The LLM section of a run: the models (an ensemble with weights), the budget, how often a
// candidate that failed to compile goes back to the model, and where prompt templates live.
// Read from a JSON file (--llm-config) or built from flags for a single model.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/json_fields.h"
#include "llm/chat.h"

namespace kernelarc {

struct LlmConfig {
  std::vector<ModelConfig> models;          ///< at least one, with a positive weight
  std::optional<int64_t> max_tokens_total;  ///< input + output tokens of the run; none = no cap
  std::optional<double> max_cost_usd;       ///< USD for the run; none = no cap
  int repair_rounds = 1;  ///< times a candidate that failed to compile goes back with the error
  std::filesystem::path prompt_dir;  ///< the user's prompt templates; empty = the built-in ones
};

/// Reads and checks the file; a relative prompt_dir is taken relative to the file's directory.
/// InputError naming the file and the field for anything wrong.
LlmConfig load_llm_config(const std::filesystem::path& path);

/// Checks and converts the JSON of a configuration file (`where` names it in errors):
///   {"models": [{"name", "provider", "endpoint", "model", "api_key_env", "weight",
///                "temperature", "max_tokens", "timeout_s", "retries", "backoff_s",
///                "price_input_per_mtok", "price_output_per_mtok"}, ...],
///    "budget": {"max_tokens": N, "max_cost_usd": X}, "repair_rounds": 1, "prompt_dir": "..."}
/// provider, endpoint and model are required; the rest default as in ModelConfig and LlmConfig.
/// A literal "api_key" is refused: keys come from the environment (api_key_env).
LlmConfig parse_llm_config(const OrderedJson& json, const std::string& where);

/// One model from the command line (--llm-provider, --llm-endpoint, --llm-model,
/// --llm-api-key-env), with ModelConfig's defaults; InputError naming the flag when one is
/// unusable.
ModelConfig model_from_flags(const std::string& provider, const std::string& endpoint,
                             const std::string& model, const std::string& api_key_env);

}  // namespace kernelarc
