#include "llm/pricing.h"

namespace kernelarc {

double call_cost_usd(const ModelConfig& model, int64_t input_tokens, int64_t output_tokens) {
  return (static_cast<double>(input_tokens) * model.price_input_per_mtok +
          static_cast<double>(output_tokens) * model.price_output_per_mtok) /
         1e6;
}

}  // namespace kernelarc
