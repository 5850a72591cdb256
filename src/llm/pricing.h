// What a call to a model costs at its configured list prices.
#pragma once

#include <cstdint>

#include "llm/chat.h"

namespace kernelarc {

/// USD for the tokens at the model's prices (per million tokens).
double call_cost_usd(const ModelConfig& model, int64_t input_tokens, int64_t output_tokens);

}  // namespace kernelarc
