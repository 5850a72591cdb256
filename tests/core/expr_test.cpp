#include "core/expr.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace kernelarc {
namespace {

int64_t eval(std::string_view text, const AxisValues& vars = {}) {
  return evaluate_expr(text, vars);
}

std::string error_of(std::string_view text, const AxisValues& vars = {}) {
  try {
    evaluate_expr(text, vars);
  } catch (const ExprError& error) {
    return error.what();
  }
  return "no error";
}

TEST(Expr, FormatAxesListsNameEqualsValueInNameOrder) {
  EXPECT_EQ(format_axes({{"seq_len", 205}, {"batch_size", 5}}), "batch_size=5 seq_len=205");
  EXPECT_EQ(format_axes({}), "");
}

TEST(Expr, PrecedenceAndAssociativity) {
  EXPECT_EQ(eval("1 + 2 * 3"), 7);
  EXPECT_EQ(eval("(1 + 2) * 3"), 9);
  EXPECT_EQ(eval("10 - 3 - 2"), 5);
  EXPECT_EQ(eval("2 ** 3 ** 2"), 512);  // right-associative
  EXPECT_EQ(eval("-2 ** 2"), -4);       // ** binds tighter than unary minus on its left
  EXPECT_EQ(eval("2 ** -0"), 1);
  EXPECT_EQ(eval("+-3"), -3);
  EXPECT_EQ(eval("2 * 3 ** 2"), 18);
  EXPECT_EQ(eval("100 // 10 // 3"), 3);
}

TEST(Expr, FloorDivisionAndModuloFollowPython) {
  EXPECT_EQ(eval("7 // 2"), 3);
  EXPECT_EQ(eval("-7 // 2"), -4);
  EXPECT_EQ(eval("7 // -2"), -4);
  EXPECT_EQ(eval("-7 // -2"), 3);
  EXPECT_EQ(eval("7 % 3"), 1);
  EXPECT_EQ(eval("-7 % 3"), 2);
  EXPECT_EQ(eval("7 % -3"), -2);
  EXPECT_EQ(eval("-7 % -3"), -1);
  EXPECT_EQ(eval("-6 % 3"), 0);
  EXPECT_EQ(eval("8 / 4"), 2);
  EXPECT_EQ(eval("-8 / 4"), -2);
}

TEST(Expr, Variables) {
  const AxisValues vars = {{"hidden_size", 4096}, {"H_qo", 32}, {"H_kv", 8}, {"H_r", 4}};
  EXPECT_EQ(eval("hidden_size // 128", vars), 32);
  EXPECT_EQ(eval("H_qo == H_kv * H_r", vars), 1);
  EXPECT_EQ(eval("H_qo != H_kv * H_r", vars), 0);
  EXPECT_EQ(expr_variables("a * (b + a) // c_1 > 3 and not d"),
            (std::set<std::string>{"a", "b", "c_1", "d"}));
  EXPECT_TRUE(expr_variables("1 + 2").empty());
}

TEST(Expr, ChainedComparisonsAndBooleans) {
  EXPECT_EQ(eval("1 < 2 < 3"), 1);
  EXPECT_EQ(eval("1 < 3 < 2"), 0);
  EXPECT_EQ(eval("3 > 2 == 2"), 1);  // 3 > 2 and 2 == 2, not (3 > 2) == 2
  EXPECT_EQ(eval("(3 > 2) == 2"), 0);
  EXPECT_EQ(eval("1 <= 1 >= 0 != 5"), 1);
  EXPECT_EQ(eval("not 0"), 1);
  EXPECT_EQ(eval("not 1 == 2"), 1);  // not (1 == 2)
  EXPECT_EQ(eval("1 and 0 or 1"), 1);
  EXPECT_EQ(eval("0 or 0"), 0);
  EXPECT_EQ(eval("5 and 7"), 1);  // results are 0 or 1
  EXPECT_EQ(eval("True and not False"), 1);
}

TEST(Expr, ShortCircuitSkipsFailingOperands) {
  EXPECT_EQ(eval("x == 0 or 10 // x > 1", {{"x", 0}}), 1);
  EXPECT_EQ(eval("x != 0 and 10 // x > 1", {{"x", 0}}), 0);
  EXPECT_EQ(eval("1 > 2 > 1 // 0"), 0);
}

TEST(Expr, ErrorsNameTheColumn) {
  EXPECT_EQ(error_of("hiden_size // 2", {{"hidden_size", 4}}),
            "at column 1: unknown variable 'hiden_size'");
  EXPECT_EQ(error_of("4 // (2 - 2)"), "at column 3: division by zero");
  EXPECT_EQ(error_of("4 % 0"), "at column 3: modulo by zero");
  EXPECT_EQ(error_of("7 / 2"), "at column 3: 7 / 2 is not an integer (use // to floor)");
  EXPECT_EQ(error_of("2 ** -1"), "at column 3: negative exponent -1 (integers only)");
  EXPECT_EQ(error_of("1 + "), "at column 5: unexpected end of expression");
  EXPECT_EQ(error_of("(1 + 2"), "at column 7: missing ')'");
  EXPECT_EQ(error_of("1 + 2)"), "at column 6: unexpected ')'");
  EXPECT_EQ(error_of("1.5 * 2"),
            "at column 2: unexpected '.' in a number (only integers are allowed)");
  EXPECT_EQ(error_of("a $ b"), "at column 3: unexpected character '$'");
  EXPECT_EQ(error_of("1 2"), "at column 3: unexpected '2'");
  EXPECT_EQ(error_of("1 + and"), "at column 5: unexpected keyword 'and'");
  EXPECT_THROW(expr_variables("a +* b"), ExprError);
}

TEST(Expr, MinAndMaxAsPythonBuiltins) {
  EXPECT_EQ(eval("min(3, 1, 2)"), 1);
  EXPECT_EQ(eval("max(-3, 1 + 4, 2)"), 5);
  EXPECT_EQ(eval("min((n + 255) // 256, 2048)", {{"n", 1 << 30}}), 2048);
  EXPECT_EQ(eval("min(a, b) * 2", {{"a", 7}, {"b", 4}}), 8);
  EXPECT_EQ(eval("max(min(1, 2), 0) == 1"), 1);
  EXPECT_EQ(expr_variables("max(a, b // c)"), (std::set<std::string>{"a", "b", "c"}));
  EXPECT_EQ(error_of("min(4)"), "at column 1: min() needs at least two arguments");
  EXPECT_EQ(error_of("max(1, 2"), "at column 9: missing ')'");
  EXPECT_EQ(error_of("max(1 2)"), "at column 7: expected ',' or ')', got '2'");
  EXPECT_EQ(error_of("1, 2"), "at column 2: unexpected ','");
  // Without a call, min is an ordinary name.
  EXPECT_EQ(eval("min + 1", {{"min", 4}}), 5);
}

TEST(Expr, OverflowIsAnError) {
  EXPECT_EQ(eval("2 ** 62"), int64_t{1} << 62);
  EXPECT_EQ(eval("(-2) ** 63"), INT64_MIN);
  EXPECT_EQ(error_of("2 ** 63"), "at column 3: integer overflow in **");
  EXPECT_EQ(error_of("9223372036854775807 + 1"), "at column 21: integer overflow in +");
  EXPECT_EQ(error_of("x * x", {{"x", int64_t{1} << 40}}), "at column 3: integer overflow in *");
  EXPECT_EQ(error_of("99999999999999999999"), "at column 1: integer literal overflows int64");
  EXPECT_EQ(error_of("-x", {{"x", INT64_MIN}}), "at column 1: integer overflow in unary -");
  EXPECT_EQ(error_of("x // -1", {{"x", INT64_MIN}}), "at column 3: integer overflow");
  EXPECT_EQ(eval("x % -1", {{"x", INT64_MIN}}), 0);
  EXPECT_EQ(eval("1 ** 1000000000000"), 1);
  EXPECT_EQ(eval("(-1) ** 1000000000001"), -1);
}

}  // namespace
}  // namespace kernelarc
