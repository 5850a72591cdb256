#include "synth/representative_points.h"

#include <optional>
#include <set>

#include "core/rng.h"

namespace kernelarc {

RepresentativePoints representative_points(const BoundTemplate& bound, int random_points,
                                           uint64_t seed) {
  const ConstrainedSpace& space = bound.space();
  std::vector<KnobPoint> candidates{space.space().default_point()};
  std::optional<KnobPoint> first, last;
  // The walk to the last point is bounded, so a huge space answers quickly.
  std::size_t walked = 0;
  space.for_each_valid([&](const KnobPoint& point) {
    if (!first) first = point;
    last = point;
    return ++walked < 1000000;
  });
  if (first) candidates.push_back(*first);
  if (last) candidates.push_back(*last);
  Rng rng(seed);
  for (int i = 0; i < random_points; ++i)
    if (auto sampled = space.sample(rng)) candidates.push_back(*sampled);

  RepresentativePoints result;
  std::set<std::string> seen;
  for (const KnobPoint& point : candidates) {
    const std::string text = format_knob_point(point);
    if (!seen.insert(text).second) continue;
    if (!space.is_valid(point)) {
      result.skipped.push_back(text + ": not valid");
    } else if (auto reason = bound.infeasible(point)) {
      result.skipped.push_back(text + ": " + *reason);
    } else {
      result.points.push_back(point);
    }
  }
  return result;
}

}  // namespace kernelarc
