// One tunable parameter of a kernel template and its finite, ordered domain.
//
// Domains are never materialised: a value is addressed by its index in the domain, so a knob
// with 2^40 values costs nothing until a point is built. Integer domains are ascending, so the
// previous/next index is the previous/next value; an enum keeps its declaration order.
//
// A knob may also name its roles, the kinds of optimisation it tunes (knob_role_names()), so
// that a strategy-specialised search agent can be limited to, say, the memory knobs, and the
// values at which it gives up accuracy the PyTorch reference keeps (fast FP8 accumulation): such
// a point passes the guard's tolerance, yet its speed is not like for like with the baselines',
// so every report names it and `--keep-accuracy` leaves it out of the search.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "core/error.h"
#include "core/expr.h"

namespace kernelarc {

enum class KnobType { IntRange, Pow2, IntSet, Enum, Bool };

/// A knob's value: an integer (int kinds and bool, as 0/1) or an enum label.
using KnobValue = std::variant<int64_t, std::string>;

/// "int_range", "pow2", "int_set", "enum" or "bool" (the spelling of the spec file).
const char* knob_type_name(KnobType type);
/// Text of a value as it appears in a canonical point ("42", "row").
std::string knob_value_text(const KnobValue& value);
/// The allowed roles, in documentation order: "memory", "parallelism", "compute", "fusion",
/// "library" (docs/TEMPLATES.md says what each means).
const std::vector<std::string>& knob_role_names();

/// Thrown by the Knob factories; field() is the spec field at fault ("max", "values[2]",
/// "default") so the spec loader can name it, what() is "<field>: <problem>".
class KnobDomainError : public InputError {
 public:
  KnobDomainError(std::string field, std::string problem);
  const std::string& field() const { return field_; }
  const std::string& problem() const { return problem_; }

 private:
  std::string field_;
  std::string problem_;
};

class Knob {
 public:
  /// min, min+step, ... up to max (inclusive when reached). step > 0, min <= max.
  static Knob int_range(std::string name, int64_t min, int64_t max, int64_t step = 1,
                        std::optional<int64_t> default_value = std::nullopt);
  /// Every power of two in [min, max]; both bounds are powers of two, 1 <= min <= max.
  static Knob pow2(std::string name, int64_t min, int64_t max,
                   std::optional<int64_t> default_value = std::nullopt);
  /// The given integers, sorted ascending; no duplicates, at least one.
  static Knob int_set(std::string name, std::vector<int64_t> values,
                      std::optional<int64_t> default_value = std::nullopt);
  /// The given labels in their order; identifiers ([A-Za-z_][A-Za-z0-9_]*), distinct.
  static Knob enumeration(std::string name, std::vector<std::string> labels,
                          std::optional<std::string> default_value = std::nullopt);
  /// 0 (false) then 1 (true).
  static Knob boolean(std::string name, bool default_value = false);

  const std::string& name() const { return name_; }
  KnobType type() const { return type_; }
  /// Number of values in the domain (at least 1).
  uint64_t size() const;
  /// Domain index of the default (the first value unless one was given).
  uint64_t default_index() const { return default_index_; }
  KnobValue value_at(uint64_t index) const;
  /// What constraint expressions see: the integer, the enum index, or 0/1 for a bool.
  int64_t expr_value_at(uint64_t index) const;
  /// The index of `value`, or nullopt when it is not in the domain (or has the wrong type).
  std::optional<uint64_t> index_of(const KnobValue& value) const;
  /// A short description of the domain for error messages, e.g. "a power of two in [32, 1024]".
  std::string describe_domain() const;

  /// The roles given to the knob, in their given order; empty when none were given.
  const std::vector<std::string>& roles() const { return roles_; }
  bool has_role(std::string_view role) const;
  /// Replaces the roles. KnobDomainError on field "roles[i]" for a name not in
  /// knob_role_names() or one given twice; the knob is unchanged then.
  Knob& with_roles(std::vector<std::string> roles);

  /// Whether the value at `index` gives up accuracy the reference keeps.
  bool trades_accuracy_at(uint64_t index) const;
  /// Domain indices of the values that trade accuracy, ascending; empty for most knobs.
  const std::vector<uint64_t>& accuracy_trades() const { return accuracy_trades_; }
  /// What is given up there, in words ("FP8 partial sums never promoted to float32").
  const std::string& accuracy_note() const { return accuracy_note_; }
  /// Marks `values` as trading accuracy, with `note` saying how. KnobDomainError on field
  /// "values[i]" for a value outside the domain or given twice, and on "values" for the default
  /// (the default point is the like-for-like one); the knob is unchanged then.
  Knob& with_accuracy_trades(const std::vector<KnobValue>& values, std::string note);

 private:
  Knob(std::string name, KnobType type) : name_(std::move(name)), type_(type) {}
  void set_default(const std::optional<KnobValue>& value);

  std::string name_;
  KnobType type_;
  int64_t min_ = 0;
  int64_t max_ = 0;
  int64_t step_ = 1;
  std::vector<int64_t> values_;      // IntSet
  std::vector<std::string> labels_;  // Enum
  uint64_t default_index_ = 0;
  std::vector<std::string> roles_;
  std::vector<uint64_t> accuracy_trades_;
  std::string accuracy_note_;
};

}  // namespace kernelarc
