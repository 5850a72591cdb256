// Agent strategies: what an agent of the orchestrator may change. A strategy names the knob
// roles it works on (templates declare a role per knob: memory, parallelism, compute, fusion,
// library) and how it weighs the universal operator's moves. An agent mutates only knobs of its
// roles, so two agents explore different directions from the same starting point; "explore"
// changes every knob and restarts more often.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "search/operators.h"
#include "synth/knob.h"

namespace kernelarc {

struct Strategy {
  std::string name;
  std::string description;
  std::vector<std::string> roles;  ///< knob roles it may change; empty = every knob
  OperatorWeights weights;
};

/// explore, memory, parallelism, compute, library, fusion: the order `--agents N` takes them in.
const std::vector<Strategy>& builtin_strategies();
/// InputError naming the built-in strategies when none has this name.
const Strategy& find_strategy(std::string_view name);

/// `--agents`: a count N (the first N built-in strategies, 1..6) or a comma-separated list of
/// strategy names (each at most once). InputError naming the flag otherwise.
std::vector<std::string> parse_agent_list(std::string_view text);

/// Whether an agent of the strategy may change the knob.
bool strategy_changes(const Strategy& strategy, const Knob& knob);
/// The filter the universal operator applies for the strategy (empty for "every knob").
KnobFilter strategy_knob_filter(const Strategy& strategy);

/// The strategies that address a bottleneck class of the diagnosis: memory -> memory;
/// compute -> compute, library; latency -> parallelism, memory; launch -> parallelism, fusion;
/// anything else (unknown, "") -> none.
std::vector<std::string> strategies_for_bottleneck(std::string_view bottleneck);

}  // namespace kernelarc
