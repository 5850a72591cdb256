#include "core/expr.h"

#include <algorithm>
#include <cctype>
#include <memory>
#include <vector>

#include <fmt/format.h>

namespace kernelarc {
namespace {

enum class TokenKind { Number, Name, Op, End };

struct Token {
  TokenKind kind = TokenKind::End;
  std::string text;
  int64_t number = 0;
  int column = 0;  // 1-based
};

[[noreturn]] void fail(int column, std::string_view problem) {
  throw ExprError(fmt::format("at column {}: {}", column, problem));
}

std::vector<Token> tokenize(std::string_view source) {
  std::vector<Token> tokens;
  std::size_t pos = 0;
  while (pos < source.size()) {
    const char c = source[pos];
    const int column = static_cast<int>(pos) + 1;
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      ++pos;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      int64_t value = 0;
      const std::size_t start = pos;
      while (pos < source.size() && std::isdigit(static_cast<unsigned char>(source[pos]))) {
        if (__builtin_mul_overflow(value, 10, &value) ||
            __builtin_add_overflow(value, source[pos] - '0', &value)) {
          fail(column, "integer literal overflows int64");
        }
        ++pos;
      }
      if (pos < source.size() && (std::isalpha(static_cast<unsigned char>(source[pos])) ||
                                  source[pos] == '.' || source[pos] == '_')) {
        fail(static_cast<int>(pos) + 1,
             fmt::format("unexpected '{}' in a number (only integers are allowed)", source[pos]));
      }
      tokens.push_back(
          {TokenKind::Number, std::string(source.substr(start, pos - start)), value, column});
    } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      const std::size_t start = pos;
      while (pos < source.size() &&
             (std::isalnum(static_cast<unsigned char>(source[pos])) || source[pos] == '_')) {
        ++pos;
      }
      tokens.push_back(
          {TokenKind::Name, std::string(source.substr(start, pos - start)), 0, column});
    } else {
      static constexpr std::string_view kOps[] = {"**", "//", "==", "!=", "<=", ">=", "+", "-",
                                                  "*",  "/",  "%",  "<",  ">",  "(",  ")", ","};
      std::string_view matched;
      for (std::string_view op : kOps) {
        if (source.substr(pos, op.size()) == op) {
          matched = op;
          break;
        }
      }
      if (matched.empty()) fail(column, fmt::format("unexpected character '{}'", c));
      tokens.push_back({TokenKind::Op, std::string(matched), 0, column});
      pos += matched.size();
    }
  }
  tokens.push_back({TokenKind::End, "", 0, static_cast<int>(source.size()) + 1});
  return tokens;
}

enum class NodeKind { Number, Variable, Negate, Not, Binary, Compare, And, Or, Min, Max };

struct Node {
  NodeKind kind = NodeKind::Number;
  int column = 0;
  int64_t number = 0;
  std::string text;  // variable name or binary operator
  std::vector<std::unique_ptr<Node>> children;
  std::vector<std::string> compare_ops;  // for Compare: between consecutive children
  std::vector<int> compare_columns;
};

using NodePtr = std::unique_ptr<Node>;

NodePtr make_node(NodeKind kind, int column) {
  auto node = std::make_unique<Node>();
  node->kind = kind;
  node->column = column;
  return node;
}

// Recursive descent over Python's grammar for the subset:
//   or: and ('or' and)*      and: not ('and' not)*      not: 'not' not | comparison
//   comparison: arith (cmp arith)*                       arith: term (('+'|'-') term)*
//   term: factor (('*'|'/'|'//'|'%') factor)*           factor: ('+'|'-') factor | power
//   power: atom ['**' factor]
//   atom: INT | NAME | ('min'|'max') '(' or (',' or)+ ')' | '(' or ')'
class Parser {
 public:
  explicit Parser(std::string_view source) : tokens_(tokenize(source)) {}

  NodePtr parse() {
    NodePtr root = parse_or();
    if (peek().kind != TokenKind::End) {
      fail(peek().column, fmt::format("unexpected '{}'", peek().text));
    }
    return root;
  }

 private:
  const Token& peek() const { return tokens_[index_]; }
  bool at_op(std::string_view op) const {
    return peek().kind == TokenKind::Op && peek().text == op;
  }
  bool at_keyword(std::string_view word) const {
    return peek().kind == TokenKind::Name && peek().text == word;
  }
  const Token& next() { return tokens_[index_++]; }

  NodePtr parse_chain(NodeKind kind, std::string_view keyword, NodePtr (Parser::*operand)()) {
    NodePtr first = (this->*operand)();
    if (!at_keyword(keyword)) return first;
    NodePtr node = make_node(kind, peek().column);
    node->children.push_back(std::move(first));
    while (at_keyword(keyword)) {
      next();
      node->children.push_back((this->*operand)());
    }
    return node;
  }

  NodePtr parse_or() { return parse_chain(NodeKind::Or, "or", &Parser::parse_and); }
  NodePtr parse_and() { return parse_chain(NodeKind::And, "and", &Parser::parse_not); }

  NodePtr parse_not() {
    if (!at_keyword("not")) return parse_comparison();
    NodePtr node = make_node(NodeKind::Not, next().column);
    node->children.push_back(parse_not());
    return node;
  }

  bool at_compare() const {
    return at_op("==") || at_op("!=") || at_op("<") || at_op("<=") || at_op(">") || at_op(">=");
  }

  NodePtr parse_comparison() {
    NodePtr first = parse_arith();
    if (!at_compare()) return first;
    NodePtr node = make_node(NodeKind::Compare, peek().column);
    node->children.push_back(std::move(first));
    while (at_compare()) {
      node->compare_columns.push_back(peek().column);
      node->compare_ops.push_back(next().text);
      node->children.push_back(parse_arith());
    }
    return node;
  }

  NodePtr binary(const Token& op, NodePtr left, NodePtr right) {
    NodePtr node = make_node(NodeKind::Binary, op.column);
    node->text = op.text;
    node->children.push_back(std::move(left));
    node->children.push_back(std::move(right));
    return node;
  }

  NodePtr parse_arith() {
    NodePtr left = parse_term();
    while (at_op("+") || at_op("-")) {
      const Token& op = next();
      left = binary(op, std::move(left), parse_term());
    }
    return left;
  }

  NodePtr parse_term() {
    NodePtr left = parse_factor();
    while (at_op("*") || at_op("/") || at_op("//") || at_op("%")) {
      const Token& op = next();
      left = binary(op, std::move(left), parse_factor());
    }
    return left;
  }

  NodePtr parse_factor() {
    if (at_op("+")) {
      next();
      return parse_factor();
    }
    if (at_op("-")) {
      NodePtr node = make_node(NodeKind::Negate, next().column);
      node->children.push_back(parse_factor());
      return node;
    }
    return parse_power();
  }

  NodePtr parse_power() {
    NodePtr base = parse_atom();
    if (!at_op("**")) return base;
    const Token& op = next();
    // The exponent is a factor, so ** is right-associative and binds tighter than a unary minus
    // on its left (-2 ** 2 == -4) but not on its right (2 ** -1 is an error at evaluation).
    return binary(op, std::move(base), parse_factor());
  }

  NodePtr parse_atom() {
    const Token& token = peek();
    switch (token.kind) {
      case TokenKind::Number: {
        NodePtr node = make_node(NodeKind::Number, token.column);
        node->number = next().number;
        return node;
      }
      case TokenKind::Name: {
        const bool call = index_ + 1 < tokens_.size() &&
                          tokens_[index_ + 1].kind == TokenKind::Op &&
                          tokens_[index_ + 1].text == "(";
        if (call && (token.text == "min" || token.text == "max")) return parse_min_max();
        if (token.text == "and" || token.text == "or" || token.text == "not") {
          fail(token.column, fmt::format("unexpected keyword '{}'", token.text));
        }
        NodePtr node = make_node(
            token.text == "True" || token.text == "False" ? NodeKind::Number : NodeKind::Variable,
            token.column);
        node->number = token.text == "True" ? 1 : 0;
        node->text = next().text;
        return node;
      }
      case TokenKind::Op:
        if (token.text == "(") {
          next();
          NodePtr inner = parse_or();
          if (!at_op(")")) {
            fail(peek().column, peek().kind == TokenKind::End
                                    ? std::string("missing ')'")
                                    : fmt::format("expected ')', got '{}'", peek().text));
          }
          next();
          return inner;
        }
        fail(token.column, fmt::format("unexpected '{}'", token.text));
      case TokenKind::End:
        break;
    }
    fail(token.column, "unexpected end of expression");
  }

  /// min(a, b, ...) / max(a, b, ...), as Python's builtins on integers (two or more arguments).
  NodePtr parse_min_max() {
    const Token& name = next();
    NodePtr node = make_node(name.text == "min" ? NodeKind::Min : NodeKind::Max, name.column);
    next();  // '('
    node->children.push_back(parse_or());
    while (at_op(",")) {
      next();
      node->children.push_back(parse_or());
    }
    if (!at_op(")")) {
      fail(peek().column, peek().kind == TokenKind::End
                              ? std::string("missing ')'")
                              : fmt::format("expected ',' or ')', got '{}'", peek().text));
    }
    next();
    if (node->children.size() < 2) {
      fail(name.column, fmt::format("{}() needs at least two arguments", name.text));
    }
    return node;
  }

  std::vector<Token> tokens_;
  std::size_t index_ = 0;
};

int64_t floor_div(int64_t a, int64_t b, int column) {
  if (b == 0) fail(column, "division by zero");
  if (a == INT64_MIN && b == -1) fail(column, "integer overflow");
  int64_t quotient = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --quotient;
  return quotient;
}

int64_t floor_mod(int64_t a, int64_t b, int column) {
  if (b == 0) fail(column, "modulo by zero");
  if (b == -1) return 0;
  int64_t remainder = a % b;
  if (remainder != 0 && ((remainder < 0) != (b < 0))) remainder += b;
  return remainder;
}

int64_t power(int64_t base, int64_t exponent, int column) {
  if (exponent < 0) fail(column, fmt::format("negative exponent {} (integers only)", exponent));
  int64_t result = 1;
  while (exponent > 0) {
    if (exponent & 1) {
      if (__builtin_mul_overflow(result, base, &result)) fail(column, "integer overflow in **");
    }
    exponent >>= 1;
    // Squaring only while bits remain means the base never exceeds the result's magnitude.
    if (exponent > 0 && __builtin_mul_overflow(base, base, &base)) {
      fail(column, "integer overflow in **");
    }
  }
  return result;
}

int64_t apply_binary(const std::string& op, int64_t a, int64_t b, int column) {
  int64_t result = 0;
  if (op == "+") {
    if (__builtin_add_overflow(a, b, &result)) fail(column, "integer overflow in +");
  } else if (op == "-") {
    if (__builtin_sub_overflow(a, b, &result)) fail(column, "integer overflow in -");
  } else if (op == "*") {
    if (__builtin_mul_overflow(a, b, &result)) fail(column, "integer overflow in *");
  } else if (op == "//") {
    result = floor_div(a, b, column);
  } else if (op == "%") {
    result = floor_mod(a, b, column);
  } else if (op == "/") {
    if (b != 0 && floor_mod(a, b, column) != 0) {
      fail(column, fmt::format("{} / {} is not an integer (use // to floor)", a, b));
    }
    result = floor_div(a, b, column);
  } else {
    result = power(a, b, column);
  }
  return result;
}

bool compare(const std::string& op, int64_t a, int64_t b) {
  if (op == "==") return a == b;
  if (op == "!=") return a != b;
  if (op == "<") return a < b;
  if (op == "<=") return a <= b;
  if (op == ">") return a > b;
  return a >= b;
}

int64_t evaluate(const Node& node, const AxisValues& variables) {
  switch (node.kind) {
    case NodeKind::Number:
      return node.number;
    case NodeKind::Variable: {
      const auto found = variables.find(node.text);
      if (found == variables.end()) {
        fail(node.column, fmt::format("unknown variable '{}'", node.text));
      }
      return found->second;
    }
    case NodeKind::Negate: {
      const int64_t value = evaluate(*node.children[0], variables);
      if (value == INT64_MIN) fail(node.column, "integer overflow in unary -");
      return -value;
    }
    case NodeKind::Not:
      return evaluate(*node.children[0], variables) == 0 ? 1 : 0;
    case NodeKind::Binary:
      return apply_binary(node.text, evaluate(*node.children[0], variables),
                          evaluate(*node.children[1], variables), node.column);
    case NodeKind::Compare: {
      // Chained as in Python: a < b < c is a < b and b < c, stopping at the first false.
      int64_t left = evaluate(*node.children[0], variables);
      for (std::size_t index = 0; index < node.compare_ops.size(); ++index) {
        const int64_t right = evaluate(*node.children[index + 1], variables);
        if (!compare(node.compare_ops[index], left, right)) return 0;
        left = right;
      }
      return 1;
    }
    case NodeKind::And:
      for (const auto& child : node.children) {
        if (evaluate(*child, variables) == 0) return 0;
      }
      return 1;
    case NodeKind::Or:
      for (const auto& child : node.children) {
        if (evaluate(*child, variables) != 0) return 1;
      }
      return 0;
    case NodeKind::Min:
    case NodeKind::Max: {
      int64_t result = evaluate(*node.children[0], variables);
      for (std::size_t index = 1; index < node.children.size(); ++index) {
        const int64_t value = evaluate(*node.children[index], variables);
        result = node.kind == NodeKind::Min ? std::min(result, value) : std::max(result, value);
      }
      return result;
    }
  }
  return 0;
}

std::string cpp_text(const Node& node, const CppVariableText& variable, std::string_view helpers) {
  auto child = [&](std::size_t index) {
    return cpp_text(*node.children[index], variable, helpers);
  };
  auto joined = [&](std::string_view separator, std::string_view each) {
    std::string text;
    for (std::size_t index = 0; index < node.children.size(); ++index) {
      if (index) text += separator;
      text += fmt::format(fmt::runtime(each), child(index));
    }
    return text;
  };
  switch (node.kind) {
    case NodeKind::Number:
      return std::to_string(node.number) + "LL";
    case NodeKind::Variable: {
      std::string text = variable(node.text);
      if (text.empty()) fail(node.column, fmt::format("unknown variable '{}'", node.text));
      return text;
    }
    case NodeKind::Negate:
      return "(-" + child(0) + ")";
    case NodeKind::Not:
      return "static_cast<long long>((" + child(0) + ") == 0)";
    case NodeKind::Binary: {
      if (node.text == "+" || node.text == "-" || node.text == "*")
        return "(" + child(0) + " " + node.text + " " + child(1) + ")";
      const char* helper = node.text == "//"  ? "floordiv"
                           : node.text == "%" ? "floormod"
                           : node.text == "/" ? "exactdiv"
                                              : "power";
      return fmt::format("{}::{}({}, {})", helpers, helper, child(0), child(1));
    }
    case NodeKind::Compare: {
      // Chained as in Python: a < b < c is a < b and b < c (the operands have no side effects).
      std::string text;
      for (std::size_t index = 0; index < node.compare_ops.size(); ++index)
        text += fmt::format("{}({}) {} ({})", index ? " && " : "", child(index),
                            node.compare_ops[index], child(index + 1));
      return "static_cast<long long>(" + text + ")";
    }
    case NodeKind::And:
      return "static_cast<long long>(" + joined(" && ", "({}) != 0") + ")";
    case NodeKind::Or:
      return "static_cast<long long>(" + joined(" || ", "({}) != 0") + ")";
    case NodeKind::Min:
    case NodeKind::Max:
      return fmt::format("{}::{}({{{}}})", helpers, node.kind == NodeKind::Min ? "min" : "max",
                         joined(", ", "{}"));
  }
  return {};
}

void collect_variables(const Node& node, std::set<std::string>& names) {
  if (node.kind == NodeKind::Variable) names.insert(node.text);
  for (const auto& child : node.children) collect_variables(*child, names);
}

}  // namespace

int64_t evaluate_expr(std::string_view expression, const AxisValues& variables) {
  const NodePtr root = Parser(expression).parse();
  return evaluate(*root, variables);
}

std::optional<int64_t> constant_expr_value(std::string_view expression) {
  try {
    return evaluate_expr(expression, {});
  } catch (const ExprError&) {
    return std::nullopt;
  }
}

std::set<std::string> expr_variables(std::string_view expression) {
  const NodePtr root = Parser(expression).parse();
  std::set<std::string> names;
  collect_variables(*root, names);
  return names;
}

std::string expr_to_cpp(std::string_view expression, const CppVariableText& variable,
                        std::string_view helpers) {
  const NodePtr root = Parser(expression).parse();
  return cpp_text(*root, variable, helpers);
}

bool is_identifier(std::string_view text) {
  if (text.empty() || !(std::isalpha(static_cast<unsigned char>(text[0])) || text[0] == '_'))
    return false;
  return std::all_of(text.begin(), text.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

std::string format_axes(const AxisValues& axes) {
  std::string text;
  for (const auto& [name, value] : axes)
    text += (text.empty() ? "" : " ") + name + "=" + std::to_string(value);
  return text;
}

}  // namespace kernelarc
