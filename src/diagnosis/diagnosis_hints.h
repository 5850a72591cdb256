// The hints of a diagnosis and the knob moves they back (internal to the diagnosis layer): each
// rule fires only on the numbers that support it, so an agent never reads advice the
// measurement does not back, and a rule writes its hint and its suggestions together, so the
// two cannot disagree.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "diagnosis/diagnosis.h"

namespace kernelarc {

/// The integer value of knob `name`, when the point has it as an integer.
std::optional<int64_t> int_knob(const std::optional<KnobPoint>& knobs, std::string_view name);

struct Advice {
  std::vector<std::string> hints;
  std::vector<KnobSuggestion> suggestions;  ///< only knobs that `knobs` has, one per knob
};

/// Hints and suggestions for a diagnosis whose numbers and class are already filled in.
Advice diagnosis_advice(const Diagnosis& diagnosis, const Definition& def,
                        const std::optional<Calibration>& calibration,
                        const std::optional<KnobPoint>& knobs);

}  // namespace kernelarc
