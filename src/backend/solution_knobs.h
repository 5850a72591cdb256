// A solution's knobs (kernelarc.knobs: {"NAME": integer}), which every compiler passes to the
// sources as -DNAME=VALUE: the values a template was instantiated with.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/expr.h"
#include "core/problem.h"

namespace kernelarc {

/// Reads ext["knobs"] of a solution ({"NAME": integer}, names are C identifiers); an absent
/// member gives no knobs. Returns an error message naming the field, or nullopt.
std::optional<std::string> parse_knobs(const OrderedJson& ext,
                                       std::map<std::string, int64_t>& knobs);
/// -DNAME=VALUE for each knob, as nvcc and NVRTC take them.
std::vector<std::string> knob_defines(const std::map<std::string, int64_t>& knobs);

}  // namespace kernelarc
