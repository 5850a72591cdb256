#include "synth/elementwise_expr.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <system_error>
#include <vector>

#include <fmt/format.h>

#include "core/error.h"

namespace kernelarc {

namespace {

enum class NodeKind { Literal, Variable, Negate, Binary, Compare, Select, Call };

struct FunctionInfo {
  std::string_view name;
  int arity;
};

// where(cond, a, b) is parsed apart (its first argument is a comparison) into a Select node.
constexpr std::array<FunctionInfo, 16> kFunctions = {{
    {"relu", 1},
    {"gelu", 1},
    {"gelu_tanh", 1},
    {"silu", 1},
    {"sigmoid", 1},
    {"tanh", 1},
    {"exp", 1},
    {"log", 1},
    {"log1p", 1},
    {"expm1", 1},
    {"sqrt", 1},
    {"rsqrt", 1},
    {"abs", 1},
    {"min", 2},
    {"max", 2},
    {"where", 3},
}};

constexpr std::array<std::string_view, 6> kComparisons = {"<", "<=", ">", ">=", "==", "!="};

const FunctionInfo* find_function(std::string_view name) {
  for (const FunctionInfo& function : kFunctions)
    if (function.name == name) return &function;
  return nullptr;
}

std::string function_names() {
  std::string names;
  for (const FunctionInfo& function : kFunctions) {
    if (!names.empty()) names += ", ";
    names += function.name;
  }
  return names;
}

// Shortest decimal text that reads back as the same float ("2", "0.5", "1e-05").
std::string float_text(float value) {
  std::array<char, 64> buffer{};
  const auto result = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value);
  return std::string(buffer.data(), result.ptr);
}

// Binding strength of a node when printed without parentheses; higher binds tighter.
int precedence(NodeKind kind, std::string_view op) {
  switch (kind) {
    case NodeKind::Compare:
      return 0;
    case NodeKind::Binary:
      return op == "+" || op == "-" ? 1 : 2;
    case NodeKind::Negate:
      return 3;
    default:
      return 4;
  }
}

}  // namespace

struct ElementwiseExpr::Node {
  NodeKind kind = NodeKind::Literal;
  std::string op;    ///< Binary: + - * /; Compare: < <= > >= == !=
  float value = 0;   ///< Literal
  std::string name;  ///< Variable, or Call and Select (the function)
  std::vector<std::shared_ptr<const Node>> children;
};

namespace {

using Node = ElementwiseExpr::Node;
using NodePtr = std::shared_ptr<const Node>;

enum class TokenKind { Number, Name, Op, End };

struct Token {
  TokenKind kind = TokenKind::End;
  std::string text;
  int column = 0;  // 1-based
};

class Parser {
 public:
  Parser(std::string_view text, std::string_view where, const std::set<std::string>& variables)
      : text_(text), where_(where), allowed_(variables) {
    tokenize();
  }

  NodePtr parse() {
    NodePtr root = parse_value();
    if (peek().kind != TokenKind::End)
      fail(peek().column, fmt::format("unexpected {}", describe(peek())));
    return root;
  }

  std::set<std::string> used_variables() const { return used_; }

 private:
  [[noreturn]] void fail(int column, std::string_view problem) const {
    throw InputError(fmt::format("{}: \"{}\": at column {}: {}", where_, text_, column, problem));
  }

  static std::string describe(const Token& token) {
    if (token.kind == TokenKind::End) return "end of expression";
    return fmt::format("'{}'", token.text);
  }

  void tokenize() {
    size_t pos = 0;
    while (pos < text_.size()) {
      const char c = text_[pos];
      const int column = static_cast<int>(pos) + 1;
      if (c == ' ' || c == '\t') {
        ++pos;
      } else if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') {
        tokens_.push_back({TokenKind::Number, scan_number(pos), column});
      } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        const size_t start = pos;
        while (pos < text_.size() &&
               (std::isalnum(static_cast<unsigned char>(text_[pos])) || text_[pos] == '_'))
          ++pos;
        tokens_.push_back({TokenKind::Name, std::string(text_.substr(start, pos - start)), column});
      } else if (const size_t length = comparison_length(pos)) {
        tokens_.push_back({TokenKind::Op, std::string(text_.substr(pos, length)), column});
        pos += length;
      } else if (std::string_view("+-*/(),").find(c) != std::string_view::npos) {
        tokens_.push_back({TokenKind::Op, std::string(1, c), column});
        ++pos;
      } else {
        fail(column, fmt::format("unexpected character '{}'", c));
      }
    }
    tokens_.push_back({TokenKind::End, "", static_cast<int>(text_.size()) + 1});
  }

  // The length of the comparison operator at pos, the longest that fits ("<=" before "<"); 0
  // when there is none.
  size_t comparison_length(size_t pos) const {
    size_t length = 0;
    for (std::string_view comparison : kComparisons)
      if (text_.substr(pos).starts_with(comparison)) length = std::max(length, comparison.size());
    return length;
  }

  // digits [. digits] [e [+-] digits], or . digits [e ...]; advances pos past it.
  std::string scan_number(size_t& pos) const {
    const size_t start = pos;
    auto digits = [&] {
      const size_t from = pos;
      while (pos < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos]))) ++pos;
      return pos - from;
    };
    size_t mantissa_digits = digits();
    if (pos < text_.size() && text_[pos] == '.') {
      ++pos;
      mantissa_digits += digits();
    }
    bool valid = mantissa_digits > 0;
    if (valid && pos < text_.size() && (text_[pos] == 'e' || text_[pos] == 'E')) {
      ++pos;
      if (pos < text_.size() && (text_[pos] == '+' || text_[pos] == '-')) ++pos;
      valid = digits() > 0;
    }
    // A letter glued to a number ("1x", "2f") is not Python either.
    while (pos < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos])) ||
                                  text_[pos] == '_' || text_[pos] == '.')) {
      ++pos;
      valid = false;
    }
    const std::string number(text_.substr(start, pos - start));
    if (!valid) fail(static_cast<int>(start) + 1, fmt::format("malformed number '{}'", number));
    return number;
  }

  const Token& peek() const { return tokens_[next_]; }
  const Token& advance() { return tokens_[next_++]; }
  bool peek_op(char op) const {
    return peek().kind == TokenKind::Op && peek().text == std::string_view(&op, 1);
  }
  bool peek_comparison() const {
    return peek().kind == TokenKind::Op &&
           std::find(kComparisons.begin(), kComparisons.end(), peek().text) != kComparisons.end();
  }

  NodePtr binary(NodeKind kind, std::string op, NodePtr left, NodePtr right) {
    auto node = std::make_shared<Node>();
    node->kind = kind;
    node->op = std::move(op);
    node->children = {std::move(left), std::move(right)};
    return node;
  }

  // A float value: comparisons have no value of their own, so one may only be the condition of
  // where() (parse_condition).
  NodePtr parse_value() {
    NodePtr value = parse_sum();
    if (peek_comparison()) {
      fail(peek().column, fmt::format("a comparison ('{}') may only be the condition of "
                                      "where(cond, a, b)",
                                      peek().text));
    }
    return value;
  }

  // where()'s first argument: value OP value, one comparison.
  NodePtr parse_condition() {
    NodePtr left = parse_sum();
    if (!peek_comparison()) {
      fail(peek().column,
           fmt::format("expected a comparison (<, <=, >, >=, ==, !=) as the condition of "
                       "where(), got {}",
                       describe(peek())));
    }
    std::string op = advance().text;
    NodePtr right = parse_sum();
    if (peek_comparison())
      fail(peek().column, fmt::format("comparisons do not chain: unexpected '{}'", peek().text));
    return binary(NodeKind::Compare, std::move(op), std::move(left), std::move(right));
  }

  NodePtr parse_sum() {
    NodePtr left = parse_product();
    while (peek_op('+') || peek_op('-')) {
      std::string op = advance().text;
      left = binary(NodeKind::Binary, std::move(op), left, parse_product());
    }
    return left;
  }

  NodePtr parse_product() {
    NodePtr left = parse_unary();
    while (peek_op('*') || peek_op('/')) {
      std::string op = advance().text;
      left = binary(NodeKind::Binary, std::move(op), left, parse_unary());
    }
    return left;
  }

  NodePtr parse_unary() {
    if (peek_op('-')) {
      advance();
      auto node = std::make_shared<Node>();
      node->kind = NodeKind::Negate;
      node->children = {parse_unary()};
      return node;
    }
    if (peek_op('+')) {
      advance();
      return parse_unary();
    }
    return parse_primary();
  }

  NodePtr parse_primary() {
    const Token& token = advance();
    if (token.kind == TokenKind::Number) return literal(token);
    if (token.kind == TokenKind::Name) return peek_op('(') ? call(token) : variable(token);
    if (token.kind == TokenKind::Op && token.text == "(") {
      NodePtr inner = parse_value();
      expect_close(token.column);
      return inner;
    }
    fail(token.column, fmt::format("expected a number, a variable, a function call or '(', got {}",
                                   describe(token)));
  }

  void expect_close(int open_column) {
    if (peek_op(')')) {
      advance();
      return;
    }
    fail(peek().column, fmt::format("expected ')' to close '(' at column {}, got {}", open_column,
                                    describe(peek())));
  }

  NodePtr literal(const Token& token) {
    const char* begin = token.text.data();
    const char* end = begin + token.text.size();
    float value = 0;
    const auto result = std::from_chars(begin, end, value);
    if (result.ec == std::errc::result_out_of_range) {
      // from_chars also reports an underflow; only a value beyond float's range is an error.
      double wide = 0;
      std::from_chars(begin, end, wide);
      if (!(std::fabs(wide) < 1.0)) {
        fail(token.column, fmt::format("number '{}' is out of the float32 range", token.text));
      }
      value = static_cast<float>(wide);
    }
    auto node = std::make_shared<Node>();
    node->kind = NodeKind::Literal;
    node->value = value;
    return node;
  }

  NodePtr variable(const Token& token) {
    if (!allowed_.contains(token.text)) {
      if (find_function(token.text))
        fail(peek().column, fmt::format("expected '(' after the function '{}', got {}", token.text,
                                        describe(peek())));
      std::string known;
      for (const std::string& name : allowed_) known += (known.empty() ? "" : ", ") + name;
      fail(token.column, fmt::format("unknown variable '{}' (known: {})", token.text,
                                     known.empty() ? "none" : known));
    }
    used_.insert(token.text);
    auto node = std::make_shared<Node>();
    node->kind = NodeKind::Variable;
    node->name = token.text;
    return node;
  }

  NodePtr call(const Token& name) {
    const FunctionInfo* function = find_function(name.text);
    if (!function) {
      fail(name.column,
           fmt::format("unknown function '{}' (known: {})", name.text, function_names()));
    }
    const int open_column = advance().column;
    const bool select = function->name == "where";
    auto node = std::make_shared<Node>();
    node->kind = select ? NodeKind::Select : NodeKind::Call;
    node->name = name.text;
    if (!peek_op(')')) {
      node->children.push_back(select ? parse_condition() : parse_value());
      while (peek_op(',')) {
        advance();
        node->children.push_back(parse_value());
      }
    }
    expect_close(open_column);
    const int given = static_cast<int>(node->children.size());
    if (given != function->arity) {
      fail(name.column, fmt::format("{}() takes {} argument{}, got {}", function->name,
                                    function->arity, function->arity == 1 ? "" : "s", given));
    }
    return node;
  }

  std::string_view text_;
  std::string_view where_;
  const std::set<std::string>& allowed_;
  std::vector<Token> tokens_;
  size_t next_ = 0;
  std::set<std::string> used_;
};

// Python-like text with only the parentheses the tree needs. The right operand of a binary
// operator is parenthesised at equal precedence too: float addition is not associative, so
// "a + (b + c)" must stay distinct from "a + b + c".
std::string canonical(const Node& node) {
  auto child = [&](const Node& operand, bool parenthesise_equal) {
    const int own = precedence(node.kind, node.op);
    const int theirs = precedence(operand.kind, operand.op);
    const std::string text = canonical(operand);
    return theirs < own || (parenthesise_equal && theirs == own) ? "(" + text + ")" : text;
  };
  switch (node.kind) {
    case NodeKind::Literal:
      return float_text(node.value);
    case NodeKind::Variable:
      return node.name;
    case NodeKind::Negate:
      return "-" + child(*node.children[0], false);
    case NodeKind::Binary:
    case NodeKind::Compare:
      return fmt::format("{} {} {}", child(*node.children[0], false), node.op,
                         child(*node.children[1], node.kind == NodeKind::Binary));
    case NodeKind::Select:
    case NodeKind::Call: {
      std::string text = node.name + "(";
      for (size_t i = 0; i < node.children.size(); ++i)
        text += (i ? ", " : "") + canonical(*node.children[i]);
      return text + ")";
    }
  }
  return {};
}

std::string code(const Node& node,
                 const std::function<std::string(const std::string&)>& variable_code) {
  switch (node.kind) {
    case NodeKind::Literal: {
      std::string text = float_text(node.value);
      // "2" is an int and "1e-05" a double in C: make it a float literal.
      if (text.find_first_of(".e") == std::string::npos) text += ".0";
      return text + "f";
    }
    case NodeKind::Variable:
      return "(" + variable_code(node.name) + ")";
    case NodeKind::Negate:
      return "(-" + code(*node.children[0], variable_code) + ")";
    case NodeKind::Binary:
    case NodeKind::Compare:
      return fmt::format("({} {} {})", code(*node.children[0], variable_code), node.op,
                         code(*node.children[1], variable_code));
    case NodeKind::Select:
      return fmt::format("({} ? {} : {})", code(*node.children[0], variable_code),
                         code(*node.children[1], variable_code),
                         code(*node.children[2], variable_code));
    case NodeKind::Call: {
      std::string text = "ka_" + node.name + "(";
      for (size_t i = 0; i < node.children.size(); ++i)
        text += (i ? ", " : "") + code(*node.children[i], variable_code);
      return text + ")";
    }
  }
  return {};
}

}  // namespace

ElementwiseExpr ElementwiseExpr::parse(std::string_view text, std::string_view where,
                                       const std::set<std::string>& variables) {
  Parser parser(text, where, variables);
  ElementwiseExpr expr;
  expr.root_ = parser.parse();
  expr.variables_ = parser.used_variables();
  expr.text_ = canonical(*expr.root_);
  return expr;
}

const std::set<std::string>& ElementwiseExpr::variables() const {
  return variables_;
}

std::string ElementwiseExpr::to_code(
    const std::function<std::string(const std::string&)>& variable_code) const {
  return code(*root_, variable_code);
}

const std::string& ElementwiseExpr::text() const {
  return text_;
}

}  // namespace kernelarc
