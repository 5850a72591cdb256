// A kernel template's knob space: typed knobs plus constraints over knobs and problem axes,
// loaded from the knob spec file that lives beside the template's source:
//
//   {"knobs": {"BLOCK_THREADS": {"type": "pow2", "min": 32, "max": 1024, "default": 256},
//              "VEC": {"type": "int_set", "values": [1, 2, 4]},
//              "TILE_K": {"type": "int_range", "min": 8, "max": 64, "step": 8},
//              "LAYOUT": {"type": "enum", "values": ["row", "col"], "default": "row"},
//              "UNROLL": {"type": "bool", "default": true},
//              "FAST_ACCUM": {"type": "bool", "default": false,
//                             "trades_accuracy": {"values": [true], "note": "..."}}},
//    "constraints": ["BLOCK_THREADS * VEC <= 4096", "N % (BLOCK_THREADS * VEC) == 0"]}
//
// "trades_accuracy" names the values at which a knob gives up accuracy the reference keeps, and
// says what in "note" (synth/knob.h); never the default.
//
// Constraints use core/expr.h; a knob appears in them as its integer value, an enum as its index
// and a bool as 0/1. Anything else an expression names must be a problem axis.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/expr.h"
#include "synth/knob.h"
#include "synth/knob_point.h"

namespace kernelarc {

/// Domain indices of a point, one per knob in declaration order.
using KnobCoords = std::vector<uint64_t>;

class KnobSpace {
 public:
  /// Throws InputError for duplicate or non-identifier knob names and for a constraint with a
  /// syntax error (the message names constraints[i]).
  KnobSpace(std::vector<Knob> knobs, std::vector<std::string> constraints);

  /// Knobs in declaration order (the enumeration order: the first knob varies slowest).
  const std::vector<Knob>& knobs() const { return knobs_; }
  const std::vector<std::string>& constraints() const { return constraints_; }
  /// The variables of constraints[i], parsed once.
  const std::set<std::string>& constraint_variables(std::size_t i) const { return variables_[i]; }
  /// The index of a knob by name, or nullopt.
  std::optional<std::size_t> knob_index(std::string_view name) const;

  /// Number of points of the unconstrained product, saturating at UINT64_MAX.
  uint64_t product_size() const;
  KnobPoint default_point() const;
  /// The default point with `values` put over it: InputError "knob '<name>': ..." for a knob the
  /// space lacks (naming those it has) or a value outside its domain.
  KnobPoint default_with(const KnobPoint& values) const;

  KnobPoint point_at(const KnobCoords& coords) const;
  /// The coordinates of a point; InputError "knob '<name>': ..." when a knob is missing,
  /// unknown, or its value is outside its domain (the message says what was expected).
  KnobCoords coords_of(const KnobPoint& point) const;
  /// parse_knob_point plus the domain checks of coords_of.
  KnobPoint parse_point(std::string_view text) const;

  /// The variables constraints see at `coords` (knob values as in the header comment) on top
  /// of `axes`.
  AxisValues expr_variables_at(const KnobCoords& coords, const AxisValues& axes) const;

  /// "KNOB=value: note" for each knob whose value in `point` trades accuracy (in knob order);
  /// empty for a like-for-like point. Knobs the point lacks are skipped.
  std::vector<std::string> accuracy_trades(const KnobPoint& point) const;
  /// This space less every value that trades accuracy (as constraints, so that a point naming
  /// one is reported as failing "FAST_ACCUM != 1").
  KnobSpace keeping_accuracy() const;

 private:
  std::vector<Knob> knobs_;
  std::vector<std::string> constraints_;
  std::vector<std::set<std::string>> variables_;
};

/// Parses a knob spec (see the header comment). `where` names the file in errors. When
/// `axis_names` is given, a constraint naming a variable that is neither a knob nor an axis, or a
/// knob named like an axis, is an error. Errors read "<where>: knobs.<name>.<field>: ...".
KnobSpace parse_knob_space(std::string_view text, std::string_view where,
                           const std::optional<std::set<std::string>>& axis_names = std::nullopt);
/// parse_knob_space on a file.
KnobSpace load_knob_space(const std::filesystem::path& path,
                          const std::optional<std::set<std::string>>& axis_names = std::nullopt);

}  // namespace kernelarc
