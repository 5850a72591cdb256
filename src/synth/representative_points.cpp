#include "synth/representative_points.h"

#include <optional>
#include <set>

#include "core/rng.h"

namespace kernelarc {

namespace {

KnobPoint with_pins(KnobPoint point, const KnobPoint& pinned) {
  for (const auto& [name, value] : pinned) point[name] = value;
  return point;
}

bool holds_pins(const KnobPoint& point, const KnobPoint& pinned) {
  for (const auto& [name, value] : pinned) {
    const auto found = point.find(name);
    if (found == point.end() || found->second != value) return false;
  }
  return true;
}

}  // namespace

RepresentativePoints representative_points(const BoundTemplate& bound, int random_points,
                                           uint64_t seed, const KnobPoint& pinned) {
  const ConstrainedSpace& space = bound.space();
  std::vector<KnobPoint> candidates{with_pins(space.space().default_point(), pinned)};
  std::optional<KnobPoint> first, last;
  // The walk to the last point is bounded, so a huge space answers quickly.
  std::size_t walked = 0;
  space.for_each_valid([&](const KnobPoint& point) {
    if (holds_pins(point, pinned)) {
      if (!first) first = point;
      last = point;
    }
    return ++walked < 1000000;
  });
  if (first) candidates.push_back(*first);
  if (last) candidates.push_back(*last);
  Rng rng(seed);
  // Pins make draws collide: draw on until enough distinct ones (repeats are dropped below).
  std::set<std::string> drawn;
  const int draws = pinned.empty() ? random_points : 8 * random_points;
  for (int i = 0; i < draws && static_cast<int>(drawn.size()) < random_points; ++i) {
    if (auto sampled = space.sample(rng)) {
      candidates.push_back(with_pins(*sampled, pinned));
      drawn.insert(format_knob_point(candidates.back()));
    }
  }

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
