// Choosing the model of an ensemble for one call: by weight, and the same for the same seed, so
// that a replayed run asks the same model the same question.
#pragma once

#include <cstdint>

#include "llm/llm_config.h"

namespace kernelarc {

/// A model drawn with odds proportional to the weights (core/rng.h, seeded with `seed`); a
/// model of weight zero is never chosen. InputError when no model has a positive weight.
const ModelConfig& choose_model(const LlmConfig& config, uint64_t seed);

}  // namespace kernelarc
