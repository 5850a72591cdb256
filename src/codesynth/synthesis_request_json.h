// A synthesis request as JSON: what a command synthesizer's program reads on stdin, and a form of
// the request that can be stored and read by a person. The protocol is documented in
// examples/synthesizers/README.md.
#pragma once

#include <nlohmann/json.hpp>

#include "codesynth/code_synthesizer.h"

namespace kernelarc {

/// The protocol version written as "protocol"; it changes when a field changes meaning.
inline constexpr int kSynthesisProtocolVersion = 1;

/// {"protocol", "problem" (definition.json as read), "workloads" (every axis value of each
/// workload), "device", "hardware", "agent", "strategy", "move", "parent" (null when none),
/// "inspirations", "knowledge", "board", "recent_failures", "seed"}. A candidate is
/// {"candidate_id", "solution" (solution.json, sources inline), "status", "results",
/// "diagnosis", "log"}.
nlohmann::json synthesis_request_to_json(const SynthesisRequest& request);

}  // namespace kernelarc
