#include "llm/ensemble.h"

#include "core/error.h"
#include "core/rng.h"

namespace kernelarc {

const ModelConfig& choose_model(const LlmConfig& config, uint64_t seed) {
  double total = 0;
  const ModelConfig* last_positive = nullptr;
  for (const ModelConfig& model : config.models) {
    if (model.weight <= 0) continue;
    total += model.weight;
    last_positive = &model;
  }
  if (last_positive == nullptr)
    throw InputError("the LLM configuration has no model with a positive weight");
  double draw = Rng(seed).uniform() * total;
  for (const ModelConfig& model : config.models) {
    if (model.weight <= 0) continue;
    if (draw < model.weight) return model;
    draw -= model.weight;
  }
  return *last_positive;  // rounding left the draw just past the last weight
}

}  // namespace kernelarc
