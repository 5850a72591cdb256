// A knob space bound to one problem's axis values and a failure cache: the valid points, and
// the ways a searcher walks them (lazy enumeration, uniform sampling, neighbours, mutation).
//
// A point is valid when every constraint evaluates non-zero (a constraint that cannot be
// evaluated at a point, e.g. a division by zero, rejects it) and it is not in the failure cache.
// Nothing here builds the product of the domains: enumeration is a depth-first walk in
// declaration order that checks each constraint as soon as its last knob is bound, so a
// constraint on the first knobs prunes whole subtrees.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/rng.h"
#include "synth/knob_space.h"

namespace kernelarc {

/// Which knobs a move may change; an empty filter admits every knob.
using KnobFilter = std::function<bool(const Knob&)>;

class ConstrainedSpace {
 public:
  /// Throws InputError "constraints[i]: ... names 'X', which is neither a knob nor an axis"
  /// when a constraint needs a variable `axes` does not give.
  ConstrainedSpace(KnobSpace space, AxisValues axes);

  const KnobSpace& space() const { return space_; }
  const AxisValues& axes() const { return axes_; }

  /// Whether the point is in the domains and satisfies every constraint (ignores failures).
  bool satisfies(const KnobPoint& point) const;
  /// satisfies() and not known to fail.
  bool is_valid(const KnobPoint& point) const;

  /// Records a point (keyed by its canonical text) that failed to compile or run, so that
  /// enumeration, sampling, neighbours and mutation skip it from now on.
  void mark_failed(const KnobPoint& point);
  bool is_failed(const KnobPoint& point) const;
  const std::set<std::string>& failures() const { return failures_; }

  /// Calls `visit` on each valid point in enumeration order (lexicographic in domain indices,
  /// the first declared knob varying slowest) until it returns false. Returns false when
  /// stopped early, true when the whole space was walked.
  bool for_each_valid(const std::function<bool(const KnobPoint&)>& visit) const;
  /// The first `limit` valid points in enumeration order.
  std::vector<KnobPoint> first_valid(std::size_t limit) const;

  /// A uniformly drawn valid point: rejection sampling over the product for at most
  /// `max_tries` draws, then, if the product has at most `enumeration_limit` points, a uniform
  /// pick among the enumerated valid points. nullopt when neither finds one. Deterministic for
  /// the generator's state.
  std::optional<KnobPoint> sample(Rng& rng, int max_tries = 256,
                                  uint64_t enumeration_limit = uint64_t{1} << 16) const;

  /// Every valid point that differs from `point` in exactly one knob by one step: the previous
  /// and next value of an integer domain, every other label of an enum, the flip of a bool.
  /// Ordered by knob (declaration order), then by domain index. Only knobs that `filter` admits
  /// change. `point` must be in the domains (InputError otherwise) but need not be valid.
  std::vector<KnobPoint> neighbours(const KnobPoint& point, const KnobFilter& filter = {}) const;
  /// A random valid point near `point`: with even odds either one knob resampled uniformly from
  /// its whole domain (a few tries) or a uniformly chosen neighbour; the other way is the
  /// fallback. Only knobs that `filter` admits change; the draws with an empty filter are those
  /// of a filter admitting every knob. nullopt when neither way gives a valid point different
  /// from `point`.
  std::optional<KnobPoint> mutate(const KnobPoint& point, Rng& rng,
                                  const KnobFilter& filter = {}) const;

 private:
  bool holds(const std::vector<std::size_t>& constraint_ids, const AxisValues& variables) const;
  bool coords_valid(const KnobCoords& coords) const;
  bool walk(std::size_t depth, KnobCoords& coords, AxisValues& variables,
            const std::function<bool(const KnobCoords&)>& visit) const;
  bool for_each_valid_coords(const std::function<bool(const KnobCoords&)>& visit) const;
  /// Indices of the knobs `filter` admits, ascending.
  std::vector<std::size_t> admitted(const KnobFilter& filter) const;
  std::optional<KnobCoords> resample_one(const KnobCoords& coords,
                                         const std::vector<std::size_t>& movable, Rng& rng) const;
  std::vector<KnobCoords> neighbour_coords(const KnobCoords& coords,
                                           const std::vector<std::size_t>& movable) const;

  KnobSpace space_;
  AxisValues axes_;
  std::vector<std::size_t> axis_only_;              // constraints naming no knob
  std::vector<std::vector<std::size_t>> by_depth_;  // constraints whose last knob is [depth]
  std::set<std::string> failures_;
};

}  // namespace kernelarc
