// How a code synthesizer takes part in the search: its candidates are nodes of a pseudo-template
// whose one knob numbers the programs an agent wrote, so the selection policies, the budget
// and the store treat them as any other candidate; and what the synthesizer is told about a
// candidate it builds on.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "codesynth/code_synthesizer.h"
#include "core/json_fields.h"
#include "optimize/measurement.h"
#include "search/search_tree.h"
#include "synth/constrained_space.h"

namespace kernelarc {

inline constexpr std::string_view kRevisionKnob = "REVISION";
/// The status of a code candidate whose synthesizer gave no program.

/// The pseudo-template's space: REVISION, with every strategy role, so that every agent writes
/// code.
ConstrainedSpace code_space();

/// What the synthesizer is asked to do with a node's parent: draft without one, repair a failed
/// one, cross over, or improve.
SynthesisMove code_move(const Proposal& proposal, bool parent_failed);

/// Per workload: median, interval, speedup over the reference and fraction of T_SOL, as the
/// lines of a small table.
std::string results_text(const Measurement& measurement,
                         const std::map<std::string, double>& reference,
                         const std::vector<Workload>& workloads);

/// The diagnosis at the workload `uuid` in words, from stored traces ("" when none).
std::string diagnosis_at(const OrderedJson& traces, const std::string& uuid);

}  // namespace kernelarc
