// A small knob space and results for the agent tests.
#pragma once

#include "optimize/agent.h"

namespace kernelarc {

// VEC (memory) and BLOCK_THREADS (parallelism) of a row kernel, VEC * BLOCK_THREADS <= 2048,
// at the given defaults.
inline ConstrainedSpace row_space(int64_t vec, int64_t threads) {
  Knob vec_knob = Knob::int_set("VEC", {1, 2, 4, 8}, vec);
  vec_knob.with_roles({"memory"});
  Knob threads_knob = Knob::pow2("BLOCK_THREADS", 32, 1024, threads);
  threads_knob.with_roles({"parallelism"});
  return ConstrainedSpace(KnobSpace({vec_knob, threads_knob}, {"VEC * BLOCK_THREADS <= 2048"}), {});
}

inline CandidateResult passed(double fitness, double noise = 0) {
  return {.passed = true, .fitness = fitness, .noise = noise, .features = {}};
}

}  // namespace kernelarc
