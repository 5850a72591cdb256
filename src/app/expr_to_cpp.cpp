#include "app/expr_to_cpp.h"

#include <cctype>
#include <vector>

#include <fmt/format.h>

#include "core/expr.h"

namespace kernelarc {
namespace {

// Tokens of an expression that expr_variables has already accepted, so the parser below only
// has to build text, never to diagnose.
std::vector<std::string> tokenize(std::string_view source) {
  static constexpr std::string_view kOps[] = {"**", "//", "==", "!=", "<=", ">=", "+", "-",
                                              "*",  "/",  "%",  "<",  ">",  "(",  ")", ","};
  std::vector<std::string> tokens;
  std::size_t pos = 0;
  while (pos < source.size()) {
    const unsigned char c = static_cast<unsigned char>(source[pos]);
    if (std::isspace(c)) {
      ++pos;
      continue;
    }
    const std::size_t start = pos;
    if (std::isalnum(c) || c == '_') {
      while (pos < source.size() &&
             (std::isalnum(static_cast<unsigned char>(source[pos])) || source[pos] == '_'))
        ++pos;
    } else {
      for (std::string_view op : kOps) {
        if (source.substr(pos, op.size()) == op) {
          pos += op.size();
          break;
        }
      }
    }
    tokens.emplace_back(source.substr(start, pos - start));
  }
  return tokens;
}

// The grammar of core/expr.cpp, emitting C++ instead of evaluating.
class Translator {
 public:
  Translator(std::vector<std::string> tokens, const CppVariableText& variable)
      : tokens_(std::move(tokens)), variable_(variable) {}

  std::string translate() { return parse_or(); }

 private:
  bool at(std::string_view token) const {
    return index_ < tokens_.size() && tokens_[index_] == token;
  }
  const std::string& next() { return tokens_[index_++]; }

  std::string parse_logical(std::string_view keyword, std::string (Translator::*operand)(),
                            std::string_view cpp_op) {
    std::string first = (this->*operand)();
    if (!at(keyword)) return first;
    std::string text = "((" + first + ") != 0";
    while (at(keyword)) {
      next();
      text += " " + std::string(cpp_op) + " (" + (this->*operand)() + ") != 0";
    }
    return "static_cast<long long>(" + text + ")";
  }
  std::string parse_or() { return parse_logical("or", &Translator::parse_and, "||"); }
  std::string parse_and() { return parse_logical("and", &Translator::parse_not, "&&"); }

  std::string parse_not() {
    if (!at("not")) return parse_comparison();
    next();
    return "static_cast<long long>((" + parse_not() + ") == 0)";
  }

  bool at_compare() const {
    return at("==") || at("!=") || at("<") || at("<=") || at(">") || at(">=");
  }

  // Chained as in Python: a < b < c is a < b and b < c (each operand is side-effect free).
  std::string parse_comparison() {
    std::string left = parse_arith();
    if (!at_compare()) return left;
    std::string text;
    while (at_compare()) {
      const std::string op = next();
      std::string right = parse_arith();
      text += (text.empty() ? "" : " && ") + ("(" + left + ") " + op + " (" + right + ")");
      left = std::move(right);
    }
    return "static_cast<long long>(" + text + ")";
  }

  std::string parse_arith() {
    std::string left = parse_term();
    while (at("+") || at("-")) {
      const std::string op = next();
      left = "(" + left + " " + op + " " + parse_term() + ")";
    }
    return left;
  }

  std::string parse_term() {
    std::string left = parse_factor();
    while (at("*") || at("/") || at("//") || at("%")) {
      const std::string op = next();
      std::string right = parse_factor();
      if (op == "*") {
        left = "(" + left + " * " + right + ")";
      } else {
        const char* helper = op == "//" ? "floordiv" : op == "%" ? "floormod" : "exactdiv";
        left = fmt::format("ka_export::{}({}, {})", helper, left, right);
      }
    }
    return left;
  }

  std::string parse_factor() {
    if (at("+")) {
      next();
      return parse_factor();
    }
    if (at("-")) {
      next();
      return "(-" + parse_factor() + ")";
    }
    return parse_power();
  }

  std::string parse_power() {
    std::string base = parse_atom();
    if (!at("**")) return base;
    next();
    return "ka_export::power(" + base + ", " + parse_factor() + ")";
  }

  std::string parse_atom() {
    const std::string token = next();
    if (token == "(") {
      std::string inner = parse_or();
      next();  // ')'
      return "(" + inner + ")";
    }
    if ((token == "min" || token == "max") && at("(")) {
      next();
      std::string text = "ka_export::" + token + "({" + parse_or();
      while (at(",")) {
        next();
        text += ", " + parse_or();
      }
      next();  // ')'
      return text + "})";
    }
    if (std::isdigit(static_cast<unsigned char>(token.front()))) return token + "LL";
    if (token == "True") return "1LL";
    if (token == "False") return "0LL";
    std::string text = variable_(token);
    if (text.empty()) throw ExprError("unknown variable '" + token + "'");
    return text;
  }

  std::vector<std::string> tokens_;
  const CppVariableText& variable_;
  std::size_t index_ = 0;
};

}  // namespace

std::string expr_to_cpp(std::string_view expression, const CppVariableText& variable) {
  expr_variables(expression);  // the syntax check, with core's messages
  return Translator(tokenize(expression), variable).translate();
}

const char* const kExportExprHeader =
    R"(// Python's integer arithmetic for the size expressions of kernelarc solutions (docs/FORMAT.md,
// "Expressions"): the generated launchers evaluate them per call. Generated by kernelarc export.
#pragma once

#include <algorithm>
#include <initializer_list>
#include <stdexcept>
#include <string>

namespace ka_export {

inline long long floordiv(long long a, long long b) {
  if (b == 0) throw std::runtime_error("kernelarc size expression: division by zero");
  long long quotient = a / b;
  if (a % b != 0 && ((a < 0) != (b < 0))) --quotient;
  return quotient;
}

inline long long floormod(long long a, long long b) {
  if (b == 0) throw std::runtime_error("kernelarc size expression: modulo by zero");
  long long remainder = a % b;
  if (remainder != 0 && ((remainder < 0) != (b < 0))) remainder += b;
  return remainder;
}

inline long long exactdiv(long long a, long long b) {
  if (floormod(a, b) != 0)
    throw std::runtime_error("kernelarc size expression: " + std::to_string(a) + " / " +
                             std::to_string(b) + " is not an integer");
  return floordiv(a, b);
}

inline long long power(long long base, long long exponent) {
  if (exponent < 0) throw std::runtime_error("kernelarc size expression: negative exponent");
  long long result = 1;
  for (; exponent > 0; --exponent) result *= base;
  return result;
}

inline long long min(std::initializer_list<long long> values) { return std::min(values); }
inline long long max(std::initializer_list<long long> values) { return std::max(values); }

}  // namespace ka_export
)";

}  // namespace kernelarc
