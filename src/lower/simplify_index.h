// The algebra behind simplify_plan (simplify_plan.h): one kernel's integer expressions (IEXPR
// trees of ["i"], ["size"], ["idx"], add, sub, mul, neg, floordiv, mod) as polynomials over the
// index dims and the var axes, with the range of every index dim known from the kernel's index
// space. floordiv and mod by a positive constant or monomial of var axes drop the terms that are
// multiples of the divisor (exact for any sign: (q*d + r) // d = q + r // d, (q*d + r) % d =
// r % d) and vanish where the rest r is provably in [0, d-1]; everything else stays as written.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/expr.h"
#include "core/json_fields.h"
#include "lower/int_poly.h"

namespace kernelarc {

/// What is known about the sizes of a plan: var axes are >= 1, const axes (and expr axes of
/// const axes only) have values; any other name keeps a SIZE opaque.
struct AxisFacts {
  std::set<std::string, std::less<>> var_axes;
  AxisValues constant_axes;
};

class IndexSimplifier {
 public:
  /// Simplifies a sub-expression that is not integer arithmetic (a load, a comparison, a
  /// where), whose own integer parts may still be simplified.
  using OtherSimplifier = std::function<OrderedJson(const OrderedJson&)>;

  /// `extents`: the kernel's index space, one SIZE per dim.
  IndexSimplifier(const AxisFacts& facts, const std::vector<std::string>& extents,
                  OtherSimplifier other);

  /// True for the nodes simplify() rewrites: i, size, idx, add, sub, mul, neg, floordiv, mod.
  static bool is_arithmetic(const OrderedJson& e);
  /// `e`: an integer-typed arithmetic tree. Returns an equal expression; `e` itself if the
  /// rewriting would overflow int64.
  OrderedJson simplify(const OrderedJson& e);
  /// The value of `[op, a, b]` (lt le gt ge eq ne) for integer-typed a and b when the ranges
  /// decide it at every point.
  std::optional<bool> compare(const std::string& op, const OrderedJson& a, const OrderedJson& b);

 private:
  struct Bounds {
    IntPoly low, high;  ///< polynomials of var axes
  };
  struct Atom {
    enum class Kind { Index, FloorDiv, Mod, Other };
    Kind kind = Kind::Other;
    OrderedJson json;
    std::optional<Bounds> bounds;
    IntPoly numerator, divisor;  ///< FloorDiv and Mod
  };

  std::optional<IntPoly> size_poly(const std::string& text) const;
  IntPoly poly(const OrderedJson& e);
  IntPoly atom(const std::string& key, Atom atom);
  IntPoly floordiv(const IntPoly& x, const IntPoly& d);
  IntPoly mod(const IntPoly& x, const IntPoly& d);
  /// A division that stays as written: a non-monomial or non-positive divisor.
  IntPoly opaque_division(const char* name, const IntPoly& x, const IntPoly& d);
  std::optional<Bounds> bounds(const IntPoly& p) const;
  /// 0 <= r <= d - 1 at every point.
  bool within_divisor(const IntPoly& r, const IntPoly& d) const;
  const Atom* single_atom(const IntPoly& p) const;
  OrderedJson emit(const IntPoly& p) const;
  OrderedJson emit_term(const IntPoly::Monomial& monomial, int64_t coefficient) const;

  const AxisFacts& facts_;
  std::vector<std::optional<IntPoly>> index_high_;
  OtherSimplifier other_;
  std::map<std::string, Atom> atoms_;
};

}  // namespace kernelarc
