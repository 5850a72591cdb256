// The knob points that stand for a bound template when it is tested or benchmarked without a
// search: the default, the two ends of the enumeration (every knob at the low end of its domain
// first, at the high end last, as far as the constraints allow) and seeded random points; valid
// and feasible ones only, no repeats.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "synth/bound_template.h"

namespace kernelarc {

struct RepresentativePoints {
  std::vector<KnobPoint> points;
  std::vector<std::string> skipped;  ///< "<point>: <why it is not valid or cannot launch>"
};

RepresentativePoints representative_points(const BoundTemplate& bound, int random_points,
                                           uint64_t seed);

}  // namespace kernelarc
