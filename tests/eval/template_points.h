// The knob points at which the template tests exercise a bound template: the default, the two
// ends of the enumeration (every knob at the low end of its domain first, at the high end last,
// as far as the constraints allow) and one seeded random point; feasible ones only, no repeats.
#pragma once

#include <string>
#include <vector>

#include "core/rng.h"
#include "synth/bound_template.h"

namespace kernelarc::testing {

struct TemplatePoints {
  std::vector<KnobPoint> points;
  std::vector<std::string> skipped;  ///< "<point>: <why it cannot launch>"
};

inline TemplatePoints template_test_points(const BoundTemplate& bound, uint64_t seed = 7) {
  const ConstrainedSpace& space = bound.space();
  std::vector<KnobPoint> candidates{space.space().default_point()};
  std::optional<KnobPoint> first, last;
  std::size_t walked = 0;
  space.for_each_valid([&](const KnobPoint& point) {
    if (!first) first = point;
    last = point;
    return ++walked < 200000;
  });
  if (first) candidates.push_back(*first);
  if (last) candidates.push_back(*last);
  Rng rng(seed);
  if (auto sampled = space.sample(rng)) candidates.push_back(*sampled);

  TemplatePoints result;
  std::set<std::string> seen;
  for (const KnobPoint& point : candidates) {
    const std::string text = format_knob_point(point);
    if (!seen.insert(text).second) continue;
    if (!space.is_valid(point)) {
      result.skipped.push_back(text + ": not valid");
      continue;
    }
    if (auto reason = bound.infeasible(point)) {
      result.skipped.push_back(text + ": " + *reason);
      continue;
    }
    result.points.push_back(point);
  }
  return result;
}

}  // namespace kernelarc::testing
