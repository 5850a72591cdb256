// The knob points that stand for a bound template when it is tested or benchmarked without a
// search: the default, the two ends of the enumeration (every knob at the low end of its domain
// first, at the high end last, as far as the constraints allow) and seeded random points; valid
// and feasible ones only, no repeats. Some knobs may be pinned, to sweep the others around them.
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

/// With `pinned` (knob -> value), only points that hold those values: the default with them put
/// over it, the ends of the enumeration among such points, and random points with them put over
/// (drawn until `random_points` distinct ones or 8 times as many draws).
RepresentativePoints representative_points(const BoundTemplate& bound, int random_points,
                                           uint64_t seed, const KnobPoint& pinned = {});

}  // namespace kernelarc
