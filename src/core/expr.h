// The integer expression language of definition.json: `expr` axes ("hidden_size // 128") and
// `constraints` ("H_qo == H_kv * H_r"). Python semantics on integers: + - * // % ** with floor
// division and floored modulo, `/` only when it divides exactly, unary -, parentheses,
// comparisons (== != < <= > >=, chained as in Python), `and` / `or` / `not`, whose results
// are 0 or 1, and min(...) / max(...) of two or more arguments.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>

namespace kernelarc {

using AxisValues = std::map<std::string, int64_t, std::less<>>;

/// A syntax or evaluation error; what() names the position and the problem, e.g.
/// "at column 7: unknown variable 'hiden_size'".
class ExprError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

int64_t evaluate_expr(std::string_view expression, const AxisValues& variables);

/// The value of an expression that names no variable ("4096", "8 * 4"); nullopt for one that
/// does, or does not parse.
std::optional<int64_t> constant_expr_value(std::string_view expression);

/// "batch_size=1025 hidden_size=4096": axis values as tables and messages show them.
std::string format_axes(const AxisValues& axes);
/// True for [A-Za-z_][A-Za-z0-9_]*: the names of axes, knobs and enum labels.
bool is_identifier(std::string_view text);

/// The variable names an expression mentions (throws ExprError on a syntax error).
std::set<std::string> expr_variables(std::string_view expression);

/// The C++ text of a variable (an axis's local, a knob's value); empty for an unknown name.
using CppVariableText = std::function<std::string(const std::string& name)>;

/// `expression` as a C++ expression of type long long with the same (Python) semantics, for
/// generated code that another compiler builds: `//`, `%`, exact `/` and `**` call
/// `helpers`::floordiv, floormod, exactdiv and power, min and max `helpers`::min({...}) and
/// max({...}); comparisons, `and`, `or` and `not` give 0 or 1. Throws ExprError on a syntax error
/// or an unknown variable.
std::string expr_to_cpp(std::string_view expression, const CppVariableText& variable,
                        std::string_view helpers);

}  // namespace kernelarc
