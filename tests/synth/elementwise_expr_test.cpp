#include <gtest/gtest.h>

#include <set>
#include <string>

#include "../core/test_support.h"
#include "synth/elementwise_expr.h"

namespace kernelarc {
namespace {

using testing::input_error_of;

const std::set<std::string> kVariables = {"x", "gate", "up", "acc", "bias"};

ElementwiseExpr parse(std::string_view text) {
  return ElementwiseExpr::parse(text, "op_params.expression", kVariables);
}

// Variables read as v_<name> so the code is easy to read in expectations.
std::string code_of(std::string_view text) {
  return parse(text).to_code([](const std::string& name) { return "v_" + name; });
}

std::string error_of(std::string_view text) {
  return input_error_of([&] { parse(text); });
}

TEST(ElementwiseExpr, GatedActivation) {
  const ElementwiseExpr expr = parse("silu(gate) * up");
  EXPECT_EQ(expr.variables(), (std::set<std::string>{"gate", "up"}));
  EXPECT_EQ(expr.text(), "silu(gate) * up");
  EXPECT_EQ(code_of("silu(gate) * up"), "(ka_silu((v_gate)) * (v_up))");
}

TEST(ElementwiseExpr, EveryFunctionMapsToKaMath) {
  EXPECT_EQ(code_of("gelu(acc + bias)"), "ka_gelu(((v_acc) + (v_bias)))");
  EXPECT_EQ(code_of("min(x, max(gate, up))"), "ka_min((v_x), ka_max((v_gate), (v_up)))");
  for (const char* function : {"relu", "gelu", "gelu_tanh", "silu", "sigmoid", "tanh", "exp", "log",
                               "log1p", "expm1", "sqrt", "rsqrt", "abs"}) {
    EXPECT_EQ(code_of(std::string(function) + "(x)"), "ka_" + std::string(function) + "((v_x))");
  }
}

TEST(ElementwiseExpr, PrecedenceAndAssociativity) {
  EXPECT_EQ(code_of("x + gate * up"), "((v_x) + ((v_gate) * (v_up)))");
  EXPECT_EQ(code_of("(x + gate) * up"), "(((v_x) + (v_gate)) * (v_up))");
  EXPECT_EQ(code_of("x - gate - up"), "(((v_x) - (v_gate)) - (v_up))");
  EXPECT_EQ(code_of("x / gate / up"), "(((v_x) / (v_gate)) / (v_up))");
  EXPECT_EQ(code_of("x / gate * up"), "(((v_x) / (v_gate)) * (v_up))");
  EXPECT_EQ(code_of("-x * gate"), "((-(v_x)) * (v_gate))");
  EXPECT_EQ(code_of("-relu(x - gate)"), "(-ka_relu(((v_x) - (v_gate))))");
  EXPECT_EQ(code_of("x - -gate"), "((v_x) - (-(v_gate)))");
  EXPECT_EQ(code_of("--x"), "(-(-(v_x)))");
}

TEST(ElementwiseExpr, LiteralsBecomeFloatLiterals) {
  EXPECT_EQ(code_of("x * 1e-5"), "((v_x) * 1e-05f)");
  EXPECT_EQ(code_of("x / 2"), "((v_x) / 2.0f)");
  EXPECT_EQ(code_of(".5 * x"), "(0.5f * (v_x))");
  EXPECT_EQ(code_of("x + 1.5e-3"), "((v_x) + 0.0015f)");
  EXPECT_EQ(code_of("x * 3.E2"), "((v_x) * 300.0f)");
  EXPECT_EQ(code_of("x * 1e+30"), "((v_x) * 1e+30f)");
  EXPECT_EQ(code_of("x * 1e-60"), "((v_x) * 0.0f)");
  EXPECT_EQ(code_of("x * 0.1"), "((v_x) * 0.1f)");
}

TEST(ElementwiseExpr, CanonicalTextKeepsOnlyNeededParentheses) {
  EXPECT_EQ(parse("  x+gate*up ").text(), "x + gate * up");
  EXPECT_EQ(parse("((x) + (gate))").text(), "x + gate");
  EXPECT_EQ(parse("x + (gate + up)").text(), "x + (gate + up)");
  EXPECT_EQ(parse("(x + gate) + up").text(), "x + gate + up");
  EXPECT_EQ(parse("x - (gate - up)").text(), "x - (gate - up)");
  EXPECT_EQ(parse("-(x * gate)").text(), "-(x * gate)");
  EXPECT_EQ(parse("(-x) * gate").text(), "-x * gate");
  EXPECT_EQ(parse("max( x ,0.50)").text(), "max(x, 0.5)");
  EXPECT_EQ(parse("+x").text(), "x");
  // Canonical text parses back to itself.
  for (const char* text : {"x + (gate + up)", "-(x * gate) / -up", "gelu_tanh(x * 1e-05) - 2"}) {
    EXPECT_EQ(parse(parse(text).text()).text(), parse(text).text()) << text;
  }
}

TEST(ElementwiseExpr, SyntaxErrorsNameTheColumn) {
  EXPECT_EQ(error_of("x + "),
            "op_params.expression: \"x + \": at column 5: expected a number, a variable, a "
            "function call or '(', got end of expression");
  EXPECT_EQ(error_of("x $ 2"),
            "op_params.expression: \"x $ 2\": at column 3: unexpected character '$'");
  EXPECT_EQ(error_of("(x + gate"),
            "op_params.expression: \"(x + gate\": at column 10: expected ')' to close '(' at "
            "column 1, got end of expression");
  EXPECT_EQ(error_of("x gate"), "op_params.expression: \"x gate\": at column 3: unexpected 'gate'");
  EXPECT_EQ(error_of("x)"), "op_params.expression: \"x)\": at column 2: unexpected ')'");
  EXPECT_EQ(error_of("x * 1e"),
            "op_params.expression: \"x * 1e\": at column 5: malformed number '1e'");
  EXPECT_EQ(error_of("2x"), "op_params.expression: \"2x\": at column 1: malformed number '2x'");
  EXPECT_EQ(error_of("1.2.3"),
            "op_params.expression: \"1.2.3\": at column 1: malformed number '1.2.3'");
  EXPECT_EQ(error_of("."), "op_params.expression: \".\": at column 1: malformed number '.'");
  EXPECT_EQ(error_of("x * 1e39"),
            "op_params.expression: \"x * 1e39\": at column 5: number '1e39' is out of the "
            "float32 range");
  EXPECT_NE(error_of("").find("at column 1: expected a number"), std::string::npos);
  EXPECT_NE(error_of("x ** 2").find("at column 4: expected a number"), std::string::npos);
}

TEST(ElementwiseExpr, UnknownFunctionsAndWrongArity) {
  EXPECT_EQ(error_of("x + softplus(x)"),
            "op_params.expression: \"x + softplus(x)\": at column 5: unknown function "
            "'softplus' (known: relu, gelu, gelu_tanh, silu, sigmoid, tanh, exp, log, log1p, "
            "expm1, sqrt, rsqrt, abs, min, max, where)");
  EXPECT_EQ(error_of("min(x)"),
            "op_params.expression: \"min(x)\": at column 1: min() takes 2 arguments, got 1");
  EXPECT_EQ(error_of("1 + relu(x, gate)"),
            "op_params.expression: \"1 + relu(x, gate)\": at column 5: relu() takes 1 argument, "
            "got 2");
  EXPECT_EQ(error_of("exp()"),
            "op_params.expression: \"exp()\": at column 1: exp() takes 1 argument, got 0");
  EXPECT_EQ(error_of("relu + x"),
            "op_params.expression: \"relu + x\": at column 6: expected '(' after the function "
            "'relu', got '+'");
  EXPECT_NE(error_of("x(1)").find("at column 1: unknown function 'x'"), std::string::npos);
}

// torch's softplus with its threshold branch: the comparison and the select become C's own.
TEST(ElementwiseExpr, WhereSelectsOnAComparison) {
  const ElementwiseExpr softplus = parse("where(x > 20, x, log1p(exp(x)))");
  EXPECT_EQ(softplus.text(), "where(x > 20, x, log1p(exp(x)))");
  EXPECT_EQ(softplus.variables(), (std::set<std::string>{"x"}));
  EXPECT_EQ(code_of("where(x > 20, x, log1p(exp(x)))"),
            "(((v_x) > 20.0f) ? (v_x) : ka_log1p(ka_exp((v_x))))");
  for (const char* op : {"<", "<=", ">", ">=", "==", "!="}) {
    EXPECT_EQ(code_of(std::string("where(x ") + op + " gate, 1, 0)"),
              std::string("(((v_x) ") + op + " (v_gate)) ? 1.0f : 0.0f)")
        << op;
  }
  // Both sides of the comparison are whole sums; the branches are any values, selects included.
  EXPECT_EQ(code_of("where(x + 1 <= gate * 2, -x, where(up != 0, up, bias)) * acc"),
            "(((((v_x) + 1.0f) <= ((v_gate) * 2.0f)) ? (-(v_x)) : (((v_up) != 0.0f) ? (v_up) : "
            "(v_bias))) * (v_acc))");
  EXPECT_EQ(parse(" where( (x+1)>=-gate ,x,0 )").text(), "where(x + 1 >= -gate, x, 0)");
  for (const char* text : {"where(x - 1 < gate, x * (x + 1), 0.5) / 2",
                           "where(x == 0, where(gate > up, gate, up), -x)"}) {
    EXPECT_EQ(parse(parse(text).text()).text(), parse(text).text()) << text;
  }
}

TEST(ElementwiseExpr, AComparisonIsOnlyWheresCondition) {
  EXPECT_EQ(error_of("x > 0"),
            "op_params.expression: \"x > 0\": at column 3: a comparison ('>') may only be the "
            "condition of where(cond, a, b)");
  EXPECT_EQ(error_of("x * (x >= 0)"),
            "op_params.expression: \"x * (x >= 0)\": at column 8: a comparison ('>=') may only "
            "be the condition of where(cond, a, b)");
  EXPECT_EQ(error_of("where(x, 1, 0)"),
            "op_params.expression: \"where(x, 1, 0)\": at column 8: expected a comparison (<, "
            "<=, >, >=, ==, !=) as the condition of where(), got ','");
  EXPECT_EQ(error_of("where(x > 0, gate < 1, 0)"),
            "op_params.expression: \"where(x > 0, gate < 1, 0)\": at column 19: a comparison "
            "('<') may only be the condition of where(cond, a, b)");
  EXPECT_EQ(error_of("where(0 < x < 1, x, 0)"),
            "op_params.expression: \"where(0 < x < 1, x, 0)\": at column 13: comparisons do not "
            "chain: unexpected '<'");
  EXPECT_EQ(error_of("where(x > 0, x)"),
            "op_params.expression: \"where(x > 0, x)\": at column 1: where() takes 3 arguments, "
            "got 2");
  EXPECT_EQ(error_of("where(x = 0, x, 1)"),
            "op_params.expression: \"where(x = 0, x, 1)\": at column 9: unexpected character '='");
  EXPECT_EQ(error_of("where(x ! 0, x, 1)"),
            "op_params.expression: \"where(x ! 0, x, 1)\": at column 9: unexpected character '!'");
}

TEST(ElementwiseExpr, UnknownVariable) {
  EXPECT_EQ(error_of("gate * upp"),
            "op_params.expression: \"gate * upp\": at column 8: unknown variable 'upp' (known: "
            "acc, bias, gate, up, x)");
  EXPECT_EQ(input_error_of([] { ElementwiseExpr::parse("y", "e", {}); }),
            "e: \"y\": at column 1: unknown variable 'y' (known: none)");
}

TEST(ElementwiseExpr, VariableNamedLikeAFunction) {
  const ElementwiseExpr expr = ElementwiseExpr::parse("exp * exp(exp)", "e", {"exp"});
  EXPECT_EQ(expr.to_code([](const std::string& name) { return "v_" + name; }),
            "((v_exp) * ka_exp((v_exp)))");
}

}  // namespace
}  // namespace kernelarc
