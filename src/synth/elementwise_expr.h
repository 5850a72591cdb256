// A small element-wise expression in float arithmetic, written in a problem's definition (a
// fusion prologue or epilogue, an element-wise op) and turned into C/CUDA code that a template
// splices in. Python-like syntax:
//
//   silu(gate) * up        gelu(acc + bias)        x * scale + 1.5e-3        -relu(a - b)
//
// Operators + - * / (and unary -), parentheses, decimal and exponent literals, variables
// (identifiers the caller allows) and the functions of templates/common/ka_math.h: relu, gelu
// (erf form), gelu_tanh, silu, sigmoid, tanh, exp, log, log1p, expm1, sqrt, rsqrt, abs,
// min(a, b), max(a, b). All values are float32.
//
// A select is torch.where's: where(cond, a, b) is a where cond holds, else b, and cond is one
// comparison of two values with < <= > >= == or != (IEEE: false against NaN, except !=):
//
//   where(x > 20, x, log1p(exp(x)))        where(acc + bias <= 0, 0.5 * acc, acc)
//
// A comparison has no value of its own: it is only ever where()'s condition (the torch mask
// idiom `x * (x > 0)` is `x * where(x > 0, 1, 0)`), and comparisons do not chain. The select
// becomes C's `?:`, so the side not taken never reaches the result: softplus's log1p(exp(x)) is
// inf at x = 100, where the select gives 100 as torch does.
#pragma once

#include <functional>
#include <memory>
#include <set>
#include <string>
#include <string_view>

namespace kernelarc {

class ElementwiseExpr {
 public:
  /// Parses `text`. InputError "<where>: \"<text>\": at column N: <problem>" on a syntax
  /// error, an unknown function, a wrong argument count, or a variable not in `variables`.
  static ElementwiseExpr parse(std::string_view text, std::string_view where,
                               const std::set<std::string>& variables);

  /// The variables the expression uses.
  const std::set<std::string>& variables() const;

  /// C/CUDA source of a float expression: `variable_code(name)` gives the code that reads a
  /// variable (e.g. "v_gate[i]"); functions become calls to ka_<name> (ka_math.h), where()
  /// becomes `((a > b) ? x : y)`; literals become float literals ("1.5e-3f"). Fully
  /// parenthesised.
  std::string to_code(const std::function<std::string(const std::string&)>& variable_code) const;

  /// The expression as parsed, canonical (for hashing and messages).
  const std::string& text() const;

  struct Node;

 private:
  std::shared_ptr<const Node> root_;
  std::set<std::string> variables_;
  std::string text_;
};

}  // namespace kernelarc
