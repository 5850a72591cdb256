// The hints of a diagnosis (internal to the diagnosis layer): each rule fires only on the
// numbers that support it, so an agent never reads advice the measurement does not back.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "diagnosis/diagnosis.h"

namespace kernelarc {

/// The integer value of knob `name`, when the point has it as an integer.
std::optional<int64_t> int_knob(const std::optional<KnobPoint>& knobs, std::string_view name);

/// Hints for a diagnosis whose numbers and class are already filled in.
std::vector<std::string> diagnosis_hints(const Diagnosis& diagnosis, const Definition& def,
                                         const std::optional<Calibration>& calibration,
                                         const std::optional<KnobPoint>& knobs);

}  // namespace kernelarc
