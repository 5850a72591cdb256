// Integer polynomials over named atoms, the algebra the plan simplifier (simplify_plan.h) uses
// to rewrite index expressions: a sum of terms c * a1 * a2 * ..., each atom a key string. Keys
// start with a prefix that says what the atom is, which also orders terms when they are
// emitted (index dims first):
//   "i:0003"  the kernel's ["idx", 3]
//   "o:..."   an opaque integer sub-expression (a floordiv/mod that stays, a load, a where)
//   "s:name"  a var axis of the definition, known to be >= 1
// Arithmetic is checked: an int64 overflow throws std::overflow_error, so a caller can keep the
// expression as it was rather than rewrite it wrongly.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kernelarc {

class IntPoly {
 public:
  /// Sorted atom keys; an atom of power p appears p times. Empty: the constant term.
  using Monomial = std::vector<std::string>;

  static IntPoly constant(int64_t value);
  static IntPoly atom(const std::string& key);

  /// Monomial -> non-zero coefficient.
  const std::map<Monomial, int64_t>& terms() const { return terms_; }
  bool is_zero() const { return terms_.empty(); }
  std::optional<int64_t> as_constant() const;
  /// The single term (c, monomial) of a polynomial with exactly one term.
  std::optional<std::pair<int64_t, Monomial>> as_term() const;

  void add_term(const Monomial& monomial, int64_t coefficient);
  IntPoly operator+(const IntPoly& other) const;
  IntPoly operator-(const IntPoly& other) const;
  IntPoly operator*(const IntPoly& other) const;
  IntPoly scaled(int64_t factor) const;

  /// True when every atom is a var axis ("s:") and the polynomial is >= 0 wherever each of them
  /// is >= 1: after substituting a = 1 + w, every coefficient is >= 0. Sufficient, not necessary.
  bool provably_nonnegative() const;

  bool operator==(const IntPoly& other) const { return terms_ == other.terms_; }

 private:
  std::map<Monomial, int64_t> terms_;
};

int64_t checked_add(int64_t a, int64_t b);
int64_t checked_mul(int64_t a, int64_t b);
/// The product of two monomials (their keys merged, sorted).
IntPoly::Monomial merge_monomials(const IntPoly::Monomial& a, const IntPoly::Monomial& b);
/// `a` without the keys of `b` (as a multiset) when b's keys are all in a; nullopt otherwise.
std::optional<IntPoly::Monomial> divide_monomial(const IntPoly::Monomial& a,
                                                 const IntPoly::Monomial& b);

}  // namespace kernelarc
