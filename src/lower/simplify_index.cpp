#include "lower/simplify_index.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>

#include <fmt/format.h>

#include "lower/sym_size.h"

namespace kernelarc {
namespace {

using Json = OrderedJson;

int64_t python_floordiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if (a % b != 0 && ((a < 0) != (b < 0))) --q;
  return q;
}

Json binary(const char* name, Json a, Json b) {
  return Json::array({name, std::move(a), std::move(b)});
}

/// A divisor the rules apply to: c * (var axes) with c > 0, so positive at every point.
std::optional<std::pair<int64_t, IntPoly::Monomial>> positive_monomial(const IntPoly& d) {
  const auto term = d.as_term();
  if (!term || term->first <= 0) return std::nullopt;
  for (const auto& key : term->second) {
    if (!key.starts_with("s:")) return std::nullopt;
  }
  return term;
}

IntPoly monomial_poly(int64_t coefficient, const IntPoly::Monomial& monomial) {
  IntPoly p;
  p.add_term(monomial, coefficient);
  return p;
}

/// x = quotient * d + rest, where quotient collects the terms of x that are multiples of d.
struct Split {
  IntPoly quotient, rest;
};

Split split(const IntPoly& x, int64_t d_coefficient, const IntPoly::Monomial& d_monomial) {
  Split result;
  for (const auto& [monomial, coefficient] : x.terms()) {
    const auto rest = divide_monomial(monomial, d_monomial);
    if (rest && coefficient % d_coefficient == 0) {
      result.quotient.add_term(*rest, coefficient / d_coefficient);
    } else {
      result.rest.add_term(monomial, coefficient);
    }
  }
  return result;
}

/// r // d == (r/g) // (d/g) and r % d == g * ((r/g) % (d/g)) for the common factor g > 0 of
/// every term of r and of d (an integer times var axes).
struct Reduced {
  IntPoly rest;
  int64_t d_coefficient;
  IntPoly::Monomial d_monomial;
  IntPoly common;
};

Reduced cancel_common_factor(const IntPoly& r, int64_t d_coefficient,
                             const IntPoly::Monomial& d_monomial) {
  int64_t g = d_coefficient;
  IntPoly::Monomial shared = d_monomial;
  for (const auto& [monomial, coefficient] : r.terms()) {
    g = std::gcd(g, coefficient < 0 ? -coefficient : coefficient);
    IntPoly::Monomial both;
    std::set_intersection(shared.begin(), shared.end(), monomial.begin(), monomial.end(),
                          std::back_inserter(both));
    shared = std::move(both);
  }
  Reduced reduced{IntPoly(), d_coefficient / g, *divide_monomial(d_monomial, shared),
                  monomial_poly(g, shared)};
  for (const auto& [monomial, coefficient] : r.terms()) {
    reduced.rest.add_term(*divide_monomial(monomial, shared), coefficient / g);
  }
  return reduced;
}

/// An upper bound of high // d for high >= 0: high = q*d + rest gives q + rest // d, where
/// rest // d <= rest / c for d = c * (var axes >= 1) and a constant rest >= 0, and < 0 for a
/// constant rest < 0; otherwise high itself (high // d <= high).
IntPoly quotient_bound(const IntPoly& high, int64_t d_coefficient,
                       const IntPoly::Monomial& d_monomial) {
  const Split parts = split(high, d_coefficient, d_monomial);
  const auto rest = parts.rest.as_constant();
  if (!rest) return high;
  if (d_monomial.empty())
    return parts.quotient + IntPoly::constant(python_floordiv(*rest, d_coefficient));
  return *rest >= 0 ? parts.quotient + IntPoly::constant(*rest / d_coefficient) : parts.quotient;
}

bool yields_zero_or_one(const std::string& name) {
  return name == "lt" || name == "le" || name == "gt" || name == "ge" || name == "eq" ||
         name == "ne" || name == "and" || name == "or" || name == "not" || name == "isnan" ||
         name == "isinf" || name == "isfinite";
}

}  // namespace

IndexSimplifier::IndexSimplifier(const AxisFacts& facts, const std::vector<std::string>& extents,
                                 OtherSimplifier other)
    : facts_(facts), other_(std::move(other)) {
  for (const auto& extent : extents) {
    const auto size = size_poly(extent);
    index_high_.push_back(size ? std::optional<IntPoly>(*size - IntPoly::constant(1))
                               : std::nullopt);
  }
}

bool IndexSimplifier::is_arithmetic(const Json& e) {
  if (!e.is_array() || e.empty() || !e[0].is_string()) return false;
  const auto& name = e[0].get_ref<const std::string&>();
  return name == "i" || name == "size" || name == "idx" || name == "add" || name == "sub" ||
         name == "mul" || name == "neg" || name == "floordiv" || name == "mod";
}

Json IndexSimplifier::simplify(const Json& e) {
  try {
    return emit(poly(e));
  } catch (const std::overflow_error&) {
    return e;
  }
}

std::optional<bool> IndexSimplifier::compare(const std::string& op, const Json& a, const Json& b) {
  try {
    const IntPoly difference = poly(a) - poly(b);
    if (op == "eq" || op == "ne") {
      std::optional<bool> equal;
      if (difference.is_zero()) {
        equal = true;
      } else if (const auto range = bounds(difference);
                 range && ((range->low - IntPoly::constant(1)).provably_nonnegative() ||
                           (IntPoly::constant(-1) - range->high).provably_nonnegative())) {
        equal = false;
      }
      if (!equal) return std::nullopt;
      return op == "eq" ? *equal : !*equal;
    }
    const auto range = bounds(difference);
    if (!range) return std::nullopt;
    const auto at_least = [&](int64_t v) {
      return (range->low - IntPoly::constant(v)).provably_nonnegative();
    };
    const auto at_most = [&](int64_t v) {
      return (IntPoly::constant(v) - range->high).provably_nonnegative();
    };
    // a - b < 0, <= 0, > 0, >= 0
    const int64_t strict = op == "lt" || op == "gt" ? 1 : 0;
    if (op == "lt" || op == "le") {
      if (at_most(-strict)) return true;
      if (at_least(1 - strict)) return false;
    } else if (op == "gt" || op == "ge") {
      if (at_least(strict)) return true;
      if (at_most(strict - 1)) return false;
    }
    return std::nullopt;
  } catch (const std::overflow_error&) {
    return std::nullopt;
  }
}

std::optional<IntPoly> IndexSimplifier::size_poly(const std::string& text) const {
  const SymSize size = SymSize::parse(text);
  if (!size.is_monomial()) return std::nullopt;
  IntPoly result = IntPoly::constant(size.coefficient());
  for (const auto& [name, power] : size.factors()) {
    IntPoly factor;
    if (const auto value = facts_.constant_axes.find(name); value != facts_.constant_axes.end()) {
      factor = IntPoly::constant(value->second);
    } else if (facts_.var_axes.contains(name)) {
      factor = IntPoly::atom("s:" + name);
    } else {
      return std::nullopt;
    }
    for (int i = 0; i < power; ++i) result = result * factor;
  }
  return result;
}

IntPoly IndexSimplifier::atom(const std::string& key, Atom atom) {
  atoms_.try_emplace(key, std::move(atom));
  return IntPoly::atom(key);
}

IntPoly IndexSimplifier::poly(const Json& e) {
  if (!is_arithmetic(e)) {
    const Json simplified = other_(e);
    if (is_arithmetic(simplified)) return poly(simplified);
    Atom other{Atom::Kind::Other, simplified, std::nullopt, {}, {}};
    const auto& name = simplified[0].get_ref<const std::string&>();
    if (yields_zero_or_one(name)) other.bounds = Bounds{IntPoly::constant(0), IntPoly::constant(1)};
    return atom("o:" + simplified.dump(), std::move(other));
  }
  const auto& name = e[0].get_ref<const std::string&>();
  if (name == "i") return IntPoly::constant(e.at(1).get<int64_t>());
  if (name == "size") {
    if (const auto size = size_poly(e.at(1).get<std::string>())) return *size;
    return atom("o:" + e.dump(), Atom{Atom::Kind::Other, e, std::nullopt, {}, {}});
  }
  if (name == "idx") {
    const auto d = e.at(1).get<std::size_t>();
    Atom index{Atom::Kind::Index, e, std::nullopt, {}, {}};
    if (d < index_high_.size() && index_high_[d]) {
      index.bounds = Bounds{IntPoly::constant(0), *index_high_[d]};
    }
    return atom(fmt::format("i:{:04}", d), std::move(index));
  }
  if (name == "neg") return poly(e.at(1)).scaled(-1);
  const IntPoly a = poly(e.at(1)), b = poly(e.at(2));
  if (name == "add") return a + b;
  if (name == "sub") return a - b;
  if (name == "mul") return a * b;
  if (name == "floordiv") return floordiv(a, b);
  return mod(a, b);
}

IntPoly IndexSimplifier::opaque_division(const char* name, const IntPoly& x, const IntPoly& d) {
  const auto xc = x.as_constant(), dc = d.as_constant();
  if (xc && dc && *dc != 0) {
    const int64_t q = python_floordiv(*xc, *dc);
    return IntPoly::constant(std::string_view(name) == "floordiv" ? q : *xc - checked_mul(q, *dc));
  }
  const Json json = binary(name, emit(x), emit(d));
  return atom("o:" + json.dump(), Atom{Atom::Kind::Other, json, std::nullopt, {}, {}});
}

IntPoly IndexSimplifier::floordiv(const IntPoly& x, const IntPoly& d) {
  const auto divisor = positive_monomial(d);
  if (!divisor) return opaque_division("floordiv", x, d);
  const Split parts = split(x, divisor->first, divisor->second);
  const Reduced r = cancel_common_factor(parts.rest, divisor->first, divisor->second);
  const IntPoly reduced_divisor = monomial_poly(r.d_coefficient, r.d_monomial);
  if (r.rest.is_zero() || within_divisor(r.rest, reduced_divisor)) return parts.quotient;
  if (const auto rest = r.rest.as_constant(); rest && r.d_monomial.empty()) {
    return parts.quotient + IntPoly::constant(python_floordiv(*rest, r.d_coefficient));
  }
  if (const Atom* inner = single_atom(r.rest); inner && inner->kind == Atom::Kind::FloorDiv) {
    // (y // a) // d == y // (a * d) for positive a and d.
    return parts.quotient + floordiv(inner->numerator, inner->divisor * reduced_divisor);
  }
  Atom quotient{Atom::Kind::FloorDiv, binary("floordiv", emit(r.rest), emit(reduced_divisor)),
                std::nullopt, r.rest, reduced_divisor};
  if (const auto range = bounds(r.rest)) {
    if (range->low.provably_nonnegative()) {
      quotient.bounds =
          Bounds{IntPoly::constant(0), quotient_bound(range->high, r.d_coefficient, r.d_monomial)};
    } else if (const auto low = range->low.as_constant(), high = range->high.as_constant();
               low && high && r.d_monomial.empty()) {
      quotient.bounds = Bounds{IntPoly::constant(python_floordiv(*low, r.d_coefficient)),
                               IntPoly::constant(python_floordiv(*high, r.d_coefficient))};
    }
  }
  const std::string key = "o:" + quotient.json.dump();
  return parts.quotient + atom(key, std::move(quotient));
}

IntPoly IndexSimplifier::mod(const IntPoly& x, const IntPoly& d) {
  const auto divisor = positive_monomial(d);
  if (!divisor) return opaque_division("mod", x, d);
  const Split parts = split(x, divisor->first, divisor->second);
  const Reduced r = cancel_common_factor(parts.rest, divisor->first, divisor->second);
  const IntPoly reduced_divisor = monomial_poly(r.d_coefficient, r.d_monomial);
  if (r.rest.is_zero()) return IntPoly();
  if (within_divisor(r.rest, reduced_divisor)) return r.common * r.rest;
  if (const auto rest = r.rest.as_constant(); rest && r.d_monomial.empty()) {
    const int64_t q = python_floordiv(*rest, r.d_coefficient);
    return r.common * IntPoly::constant(*rest - q * r.d_coefficient);
  }
  if (const Atom* inner = single_atom(r.rest); inner && inner->kind == Atom::Kind::Mod) {
    // (y % a) % d == y % d when d divides a.
    if (split(inner->divisor, r.d_coefficient, r.d_monomial).rest.is_zero()) {
      return r.common * mod(inner->numerator, reduced_divisor);
    }
  }
  Atom remainder{Atom::Kind::Mod, binary("mod", emit(r.rest), emit(reduced_divisor)),
                 Bounds{IntPoly::constant(0), reduced_divisor - IntPoly::constant(1)}, r.rest,
                 reduced_divisor};
  const std::string key = "o:" + remainder.json.dump();
  return r.common * atom(key, std::move(remainder));
}

const IndexSimplifier::Atom* IndexSimplifier::single_atom(const IntPoly& p) const {
  const auto term = p.as_term();
  if (!term || term->first != 1 || term->second.size() != 1) return nullptr;
  const auto found = atoms_.find(term->second.front());
  return found == atoms_.end() ? nullptr : &found->second;
}

bool IndexSimplifier::within_divisor(const IntPoly& r, const IntPoly& d) const {
  const auto range = bounds(r);
  return range && range->low.provably_nonnegative() &&
         (d - IntPoly::constant(1) - range->high).provably_nonnegative();
}

std::optional<IndexSimplifier::Bounds> IndexSimplifier::bounds(const IntPoly& p) const {
  Bounds total{IntPoly(), IntPoly()};
  for (const auto& [monomial, coefficient] : p.terms()) {
    IntPoly scale = IntPoly::constant(coefficient);  // times var axes: exact, positive
    std::vector<const Bounds*> factors;
    for (const auto& key : monomial) {
      if (key.starts_with("s:")) {
        scale = scale * IntPoly::atom(key);
        continue;
      }
      const auto found = atoms_.find(key);
      if (found == atoms_.end() || !found->second.bounds) return std::nullopt;
      factors.push_back(&*found->second.bounds);
    }
    IntPoly low = scale, high = scale;
    if (factors.size() == 1) {
      low = low * factors[0]->low;
      high = high * factors[0]->high;
    } else {
      // A product of ranges is the product of their ends only when every factor is >= 0.
      for (const Bounds* factor : factors) {
        if (!factor->low.provably_nonnegative()) return std::nullopt;
        low = low * factor->low;
        high = high * factor->high;
      }
    }
    if (coefficient < 0) std::swap(low, high);
    total.low = total.low + low;
    total.high = total.high + high;
  }
  return total;
}

Json IndexSimplifier::emit_term(const IntPoly::Monomial& monomial, int64_t coefficient) const {
  SymSize size = SymSize::constant(coefficient);
  std::vector<Json> factors;
  for (const auto& key : monomial) {
    if (key.starts_with("s:")) {
      size = size * SymSize::axis(key.substr(2));
    } else {
      factors.push_back(atoms_.at(key).json);
    }
  }
  Json result;
  if (!size.is_constant()) {
    result = Json::array({"size", size.text()});
  } else if (factors.empty() || (coefficient != 1 && coefficient != -1)) {
    result = Json::array({"i", coefficient});
  }
  for (auto& factor : factors) {
    result =
        result.is_null() ? std::move(factor) : binary("mul", std::move(result), std::move(factor));
  }
  if (size.is_constant() && coefficient == -1 && !factors.empty()) {
    result = Json::array({"neg", std::move(result)});
  }
  return result;
}

Json IndexSimplifier::emit(const IntPoly& p) const {
  // Positive terms first and added, then negative ones subtracted, the constant last.
  Json result;
  int64_t constant = 0;
  for (const int sign : {1, -1}) {
    for (const auto& [monomial, coefficient] : p.terms()) {
      if (monomial.empty()) {
        constant = coefficient;
        continue;
      }
      if ((coefficient > 0) != (sign > 0)) continue;
      if (result.is_null()) {
        result = emit_term(monomial, coefficient);
      } else {
        result = binary(sign > 0 ? "add" : "sub", std::move(result),
                        emit_term(monomial, coefficient * sign));
      }
    }
  }
  if (result.is_null()) return Json::array({"i", constant});
  if (constant > 0) return binary("add", std::move(result), Json::array({"i", constant}));
  if (constant < 0) return binary("sub", std::move(result), Json::array({"i", -constant}));
  return result;
}

}  // namespace kernelarc
