#include "lower/sym_size.h"
#include "core/text.h"

#include <cctype>
#include <charconv>

#include <fmt/format.h>

namespace kernelarc {
namespace {

std::optional<int64_t> parse_integer(std::string_view text) {
  int64_t value = 0;
  const auto* end = text.data() + text.size();
  const auto [ptr, error] = std::from_chars(text.data(), end, value);
  if (error != std::errc() || ptr != end) return std::nullopt;
  return value;
}

}  // namespace

SymSize SymSize::constant(int64_t value) {
  SymSize size;
  size.coefficient_ = value;
  return size;
}

SymSize SymSize::axis(std::string_view name) {
  SymSize size;
  size.coefficient_ = 1;
  size.factors_.emplace(std::string(name), 1);
  return size;
}

SymSize SymSize::parse(std::string_view text) {
  SymSize size;
  size.coefficient_ = 1;
  std::string_view rest = trim(text);
  bool negative = false;
  if (rest.starts_with('-')) {
    negative = true;
    rest = trim(rest.substr(1));
  }
  bool valid = !rest.empty();
  while (valid && !rest.empty()) {
    const auto star = rest.find('*');
    std::string_view factor = trim(rest.substr(0, star));
    rest = star == std::string_view::npos ? std::string_view{} : rest.substr(star + 1);
    int power = 1;
    if (rest.starts_with('*')) {  // "name**2"
      rest.remove_prefix(1);
      const auto next = rest.find('*');
      const auto exponent = parse_integer(trim(rest.substr(0, next)));
      rest = next == std::string_view::npos ? std::string_view{} : rest.substr(next + 1);
      if (!exponent || *exponent < 0) {
        valid = false;
        break;
      }
      power = static_cast<int>(*exponent);
    }
    if (const auto number = parse_integer(factor)) {
      for (int i = 0; i < power; ++i) size.coefficient_ *= *number;
    } else if (is_identifier(factor)) {
      size.factors_[std::string(factor)] += power;
    } else {
      valid = false;
    }
    if (star == std::string_view::npos) break;
    if (rest.empty()) valid = false;  // a trailing '*'
  }
  if (!valid) {
    SymSize raw;
    raw.monomial_ = false;
    raw.raw_ = std::string(trim(text));
    return raw;
  }
  if (negative) size.coefficient_ = -size.coefficient_;
  if (size.coefficient_ == 0) size.factors_.clear();
  std::erase_if(size.factors_, [](const auto& factor) { return factor.second == 0; });
  return size;
}

std::string SymSize::text() const {
  if (!monomial_) return raw_;
  if (factors_.empty()) return std::to_string(coefficient_);
  std::string text = coefficient_ < 0 ? "-" : "";
  bool first = true;
  for (const auto& [name, power] : factors_) {
    for (int i = 0; i < power; ++i) {
      if (!first) text += '*';
      text += name;
      first = false;
    }
  }
  const int64_t magnitude = coefficient_ < 0 ? -coefficient_ : coefficient_;
  if (magnitude != 1) text += fmt::format("*{}", magnitude);
  return text;
}

int64_t SymSize::evaluate(const AxisValues& axes) const {
  if (!monomial_) return evaluate_expr(raw_, axes);
  int64_t value = coefficient_;
  for (const auto& [name, power] : factors_) {
    const auto found = axes.find(name);
    if (found == axes.end()) throw ExprError(fmt::format("unknown variable '{}'", name));
    for (int i = 0; i < power; ++i) value *= found->second;
  }
  return value;
}

SymSize SymSize::operator*(const SymSize& other) const {
  if (!monomial_ || !other.monomial_) {
    SymSize raw;
    raw.monomial_ = false;
    raw.raw_ = fmt::format("({})*({})", text(), other.text());
    return raw;
  }
  SymSize product = constant(coefficient_ * other.coefficient_);
  if (product.coefficient_ == 0) return product;
  product.factors_ = factors_;
  for (const auto& [name, power] : other.factors_) product.factors_[name] += power;
  return product;
}

std::optional<SymSize> SymSize::divided_by(const SymSize& other) const {
  if (!monomial_ || !other.monomial_ || other.coefficient_ == 0) return std::nullopt;
  if (coefficient_ % other.coefficient_ != 0) return std::nullopt;
  SymSize quotient = constant(coefficient_ / other.coefficient_);
  if (quotient.coefficient_ == 0) return quotient;
  quotient.factors_ = factors_;
  for (const auto& [name, power] : other.factors_) {
    const auto found = quotient.factors_.find(name);
    if (found == quotient.factors_.end() || found->second < power) return std::nullopt;
    found->second -= power;
    if (found->second == 0) quotient.factors_.erase(found);
  }
  return quotient;
}

bool SymSize::operator==(const SymSize& other) const {
  if (monomial_ != other.monomial_) return false;
  if (!monomial_) return raw_ == other.raw_;
  return coefficient_ == other.coefficient_ && factors_ == other.factors_;
}

}  // namespace kernelarc
