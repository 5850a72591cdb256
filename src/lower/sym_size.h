// A size of the op graph: an integer expression over the definition's axis names. The tracer
// writes every size, stride, offset and integer argument as a monomial (a product of var axes
// times an integer, "batch_size*seq_len*4096"), which the lowering multiplies, divides and
// compares symbolically. A text that is not such a monomial is kept as written so that the
// lowering can name it when it refuses the graph.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "core/expr.h"

namespace kernelarc {

class SymSize {
 public:
  SymSize() = default;
  /// Never throws: a text that is not a monomial gives is_monomial() == false.
  static SymSize parse(std::string_view text);
  static SymSize constant(int64_t value);
  static SymSize axis(std::string_view name);

  bool is_monomial() const { return monomial_; }
  bool is_constant() const { return monomial_ && factors_.empty(); }
  /// The integer of a constant; the coefficient of any other monomial.
  int64_t coefficient() const { return coefficient_; }
  /// Axis name -> power.
  const std::map<std::string, int, std::less<>>& factors() const { return factors_; }
  bool is_one() const { return is_constant() && coefficient_ == 1; }
  bool is_zero() const { return is_constant() && coefficient_ == 0; }

  /// The expression in core/expr.h syntax ("batch_size*seq_len*4096", "-1").
  std::string text() const;
  int64_t evaluate(const AxisValues& axes) const;

  SymSize operator*(const SymSize& other) const;
  /// The exact quotient when `other` divides this monomial; nullopt otherwise.
  std::optional<SymSize> divided_by(const SymSize& other) const;
  bool operator==(const SymSize& other) const;

 private:
  bool monomial_ = true;
  int64_t coefficient_ = 0;
  std::map<std::string, int, std::less<>> factors_;
  std::string raw_;  ///< the text of a non-monomial
};

}  // namespace kernelarc
