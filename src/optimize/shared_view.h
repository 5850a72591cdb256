// What an agent may read of the others: an immutable snapshot of the board's conclusions and of
// every agent's best candidate, taken by the orchestrator before it asks an agent to propose.
// Agents get it by const reference and own nothing in it, so no agent can change another's tree.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "optimize/measurement.h"
#include "synth/knob_point.h"

namespace kernelarc {

/// A verified conclusion of the board, in the form an agent can apply.
struct KnobChange {
  std::string knob;
  KnobValue from;
  KnobValue to;
};

struct Conclusion {
  std::string template_name;
  std::vector<KnobChange> changes;  ///< parent -> child, by knob name
  Speedup speedup;
  int64_t before_candidate = 0;
  int64_t after_candidate = 0;
};

struct AgentBest {
  std::string agent;
  int64_t candidate_id = 0;
  std::string template_name;
  KnobPoint point;
  double fitness = 0;
  double noise = 0;  ///< relative, as the guard measured it
};

struct SharedView {
  std::vector<Conclusion> conclusions;  ///< in the order posted
  std::vector<AgentBest> bests;         ///< one per agent with a passed candidate, best first
};

}  // namespace kernelarc
