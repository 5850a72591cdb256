#include "lower/int_poly.h"

#include <algorithm>
#include <stdexcept>

namespace kernelarc {

int64_t checked_add(int64_t a, int64_t b) {
  int64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum)) throw std::overflow_error("integer overflow in +");
  return sum;
}

int64_t checked_mul(int64_t a, int64_t b) {
  int64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product)) throw std::overflow_error("integer overflow in *");
  return product;
}

IntPoly::Monomial merge_monomials(const IntPoly::Monomial& a, const IntPoly::Monomial& b) {
  IntPoly::Monomial merged;
  merged.reserve(a.size() + b.size());
  std::merge(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(merged));
  return merged;
}

std::optional<IntPoly::Monomial> divide_monomial(const IntPoly::Monomial& a,
                                                 const IntPoly::Monomial& b) {
  if (!std::includes(a.begin(), a.end(), b.begin(), b.end())) return std::nullopt;
  IntPoly::Monomial rest;
  std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(rest));
  return rest;
}

IntPoly IntPoly::constant(int64_t value) {
  IntPoly poly;
  poly.add_term({}, value);
  return poly;
}

IntPoly IntPoly::atom(const std::string& key) {
  IntPoly poly;
  poly.add_term({key}, 1);
  return poly;
}

std::optional<int64_t> IntPoly::as_constant() const {
  if (terms_.empty()) return 0;
  if (terms_.size() == 1 && terms_.begin()->first.empty()) return terms_.begin()->second;
  return std::nullopt;
}

std::optional<std::pair<int64_t, IntPoly::Monomial>> IntPoly::as_term() const {
  if (terms_.size() != 1) return std::nullopt;
  return std::make_pair(terms_.begin()->second, terms_.begin()->first);
}

void IntPoly::add_term(const Monomial& monomial, int64_t coefficient) {
  if (coefficient == 0) return;
  const auto [at, inserted] = terms_.emplace(monomial, coefficient);
  if (inserted) return;
  at->second = checked_add(at->second, coefficient);
  if (at->second == 0) terms_.erase(at);
}

IntPoly IntPoly::operator+(const IntPoly& other) const {
  IntPoly sum = *this;
  for (const auto& [monomial, coefficient] : other.terms_) sum.add_term(monomial, coefficient);
  return sum;
}

IntPoly IntPoly::operator-(const IntPoly& other) const {
  return *this + other.scaled(-1);
}

IntPoly IntPoly::operator*(const IntPoly& other) const {
  IntPoly product;
  for (const auto& [a, ca] : terms_) {
    for (const auto& [b, cb] : other.terms_)
      product.add_term(merge_monomials(a, b), checked_mul(ca, cb));
  }
  return product;
}

IntPoly IntPoly::scaled(int64_t factor) const {
  IntPoly result;
  for (const auto& [monomial, coefficient] : terms_) {
    result.add_term(monomial, checked_mul(coefficient, factor));
  }
  return result;
}

bool IntPoly::provably_nonnegative() const {
  IntPoly shifted;
  for (const auto& [monomial, coefficient] : terms_) {
    IntPoly term = constant(coefficient);
    for (const auto& key : monomial) {
      if (!key.starts_with("s:")) return false;
      term = term * (constant(1) + atom("w:" + key.substr(2)));
    }
    shifted = shifted + term;
  }
  return std::all_of(shifted.terms_.begin(), shifted.terms_.end(),
                     [](const auto& term) { return term.second >= 0; });
}

}  // namespace kernelarc
