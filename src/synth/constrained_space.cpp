#include "synth/constrained_space.h"

namespace kernelarc {

ConstrainedSpace::ConstrainedSpace(KnobSpace space, AxisValues axes)
    : space_(std::move(space)), axes_(std::move(axes)), by_depth_(space_.knobs().size()) {
  for (std::size_t i = 0; i < space_.constraints().size(); ++i) {
    std::optional<std::size_t> last_knob;
    for (const std::string& variable : space_.constraint_variables(i)) {
      if (const auto knob = space_.knob_index(variable)) {
        last_knob = std::max(last_knob.value_or(0), *knob);
      } else if (!axes_.contains(variable)) {
        throw InputError("constraints[" + std::to_string(i) + "]: \"" + space_.constraints()[i] +
                         "\" names '" + variable + "', which is neither a knob nor an axis");
      }
    }
    if (last_knob) {
      by_depth_[*last_knob].push_back(i);
    } else {
      axis_only_.push_back(i);
    }
  }
}

bool ConstrainedSpace::holds(const std::vector<std::size_t>& constraint_ids,
                             const AxisValues& variables) const {
  for (const std::size_t id : constraint_ids) {
    try {
      if (evaluate_expr(space_.constraints()[id], variables) == 0) return false;
    } catch (const ExprError&) {
      return false;
    }
  }
  return true;
}

bool ConstrainedSpace::coords_valid(const KnobCoords& coords) const {
  const AxisValues variables = space_.expr_variables_at(coords, axes_);
  if (!holds(axis_only_, variables)) return false;
  for (const auto& ids : by_depth_) {
    if (!holds(ids, variables)) return false;
  }
  return failures_.empty() || !failures_.contains(format_knob_point(space_.point_at(coords)));
}

bool ConstrainedSpace::satisfies(const KnobPoint& point) const {
  KnobCoords coords;
  try {
    coords = space_.coords_of(point);
  } catch (const InputError&) {
    return false;
  }
  const AxisValues variables = space_.expr_variables_at(coords, axes_);
  if (!holds(axis_only_, variables)) return false;
  for (const auto& ids : by_depth_) {
    if (!holds(ids, variables)) return false;
  }
  return true;
}

bool ConstrainedSpace::is_valid(const KnobPoint& point) const {
  return satisfies(point) && !is_failed(point);
}

void ConstrainedSpace::mark_failed(const KnobPoint& point) {
  failures_.insert(format_knob_point(point));
}

bool ConstrainedSpace::is_failed(const KnobPoint& point) const {
  return failures_.contains(format_knob_point(point));
}

bool ConstrainedSpace::walk(std::size_t depth, KnobCoords& coords, AxisValues& variables,
                            const std::function<bool(const KnobCoords&)>& visit) const {
  const auto& knobs = space_.knobs();
  if (depth == knobs.size()) {
    if (!failures_.empty() && failures_.contains(format_knob_point(space_.point_at(coords))))
      return true;
    return visit(coords);
  }
  const Knob& knob = knobs[depth];
  for (uint64_t index = 0; index < knob.size(); ++index) {
    coords[depth] = index;
    variables[knob.name()] = knob.expr_value_at(index);
    if (holds(by_depth_[depth], variables) && !walk(depth + 1, coords, variables, visit))
      return false;
  }
  variables.erase(knob.name());
  return true;
}

bool ConstrainedSpace::for_each_valid_coords(
    const std::function<bool(const KnobCoords&)>& visit) const {
  AxisValues variables = axes_;
  if (!holds(axis_only_, variables)) return true;
  KnobCoords coords(space_.knobs().size(), 0);
  return walk(0, coords, variables, visit);
}

bool ConstrainedSpace::for_each_valid(const std::function<bool(const KnobPoint&)>& visit) const {
  return for_each_valid_coords(
      [&](const KnobCoords& coords) { return visit(space_.point_at(coords)); });
}

std::vector<KnobPoint> ConstrainedSpace::first_valid(std::size_t limit) const {
  std::vector<KnobPoint> points;
  if (limit == 0) return points;
  for_each_valid([&](const KnobPoint& point) {
    points.push_back(point);
    return points.size() < limit;
  });
  return points;
}

std::optional<KnobPoint> ConstrainedSpace::sample(Rng& rng, int max_tries,
                                                  uint64_t enumeration_limit) const {
  const auto& knobs = space_.knobs();
  KnobCoords coords(knobs.size());
  for (int attempt = 0; attempt < max_tries; ++attempt) {
    for (std::size_t i = 0; i < knobs.size(); ++i) coords[i] = rng.below(knobs[i].size());
    if (coords_valid(coords)) return space_.point_at(coords);
  }
  if (space_.product_size() > enumeration_limit) return std::nullopt;
  std::vector<KnobCoords> valid;
  for_each_valid_coords([&](const KnobCoords& found) {
    valid.push_back(found);
    return true;
  });
  if (valid.empty()) return std::nullopt;
  return space_.point_at(valid[rng.below(valid.size())]);
}

std::vector<std::size_t> ConstrainedSpace::admitted(const KnobFilter& filter) const {
  std::vector<std::size_t> indices;
  const auto& knobs = space_.knobs();
  for (std::size_t i = 0; i < knobs.size(); ++i) {
    if (!filter || filter(knobs[i])) indices.push_back(i);
  }
  return indices;
}

std::vector<KnobCoords> ConstrainedSpace::neighbour_coords(
    const KnobCoords& coords, const std::vector<std::size_t>& movable) const {
  std::vector<KnobCoords> result;
  const auto& knobs = space_.knobs();
  for (const std::size_t i : movable) {
    std::vector<uint64_t> candidates;
    const uint64_t current = coords[i];
    if (knobs[i].type() == KnobType::Enum) {
      for (uint64_t index = 0; index < knobs[i].size(); ++index) {
        if (index != current) candidates.push_back(index);
      }
    } else {
      if (current > 0) candidates.push_back(current - 1);
      if (current + 1 < knobs[i].size()) candidates.push_back(current + 1);
    }
    for (const uint64_t index : candidates) {
      KnobCoords next = coords;
      next[i] = index;
      if (coords_valid(next)) result.push_back(std::move(next));
    }
  }
  return result;
}

std::vector<KnobPoint> ConstrainedSpace::neighbours(const KnobPoint& point,
                                                    const KnobFilter& filter) const {
  std::vector<KnobPoint> points;
  for (const KnobCoords& coords : neighbour_coords(space_.coords_of(point), admitted(filter)))
    points.push_back(space_.point_at(coords));
  return points;
}

// With every knob movable, movable[k] == k, so the draws are those of picking among all knobs.
std::optional<KnobCoords> ConstrainedSpace::resample_one(const KnobCoords& coords,
                                                         const std::vector<std::size_t>& movable,
                                                         Rng& rng) const {
  const auto& knobs = space_.knobs();
  constexpr int kTries = 8;
  for (int attempt = 0; attempt < kTries && !movable.empty(); ++attempt) {
    const std::size_t knob = movable[rng.below(movable.size())];
    if (knobs[knob].size() < 2) continue;
    // Draw among the other values only, so every try changes the point.
    uint64_t index = rng.below(knobs[knob].size() - 1);
    if (index >= coords[knob]) ++index;
    KnobCoords next = coords;
    next[knob] = index;
    if (coords_valid(next)) return next;
  }
  return std::nullopt;
}

std::optional<KnobPoint> ConstrainedSpace::mutate(const KnobPoint& point, Rng& rng,
                                                  const KnobFilter& filter) const {
  const KnobCoords coords = space_.coords_of(point);
  const std::vector<std::size_t> movable = admitted(filter);
  const bool resample_first = rng.below(2) == 0;
  if (resample_first) {
    if (const auto next = resample_one(coords, movable, rng)) return space_.point_at(*next);
  }
  const std::vector<KnobCoords> near = neighbour_coords(coords, movable);
  if (!near.empty()) return space_.point_at(near[rng.below(near.size())]);
  if (!resample_first) {
    if (const auto next = resample_one(coords, movable, rng)) return space_.point_at(*next);
  }
  return std::nullopt;
}

}  // namespace kernelarc
