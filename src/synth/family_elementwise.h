// The element-wise families (elementwise, activation) as the binder sees a problem once it has
// checked it: output[r, c] = expression(operands at (r, c)) over an output of shape [..., C],
// where each operand reads a row tensor at a column offset, a per-column vector or a scalar.
// The binder (family_elementwise.cpp) builds it from a definition; the header generator
// (family_elementwise_header.cpp) turns it into ka_problem.h.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/problem.h"
#include "synth/elementwise_expr.h"
#include "synth/kernel_template.h"

namespace kernelarc {

enum class OperandKind {
  Row,     ///< [..., W], the output's leading axes: element (r, c) at r * W + offset + c
  Column,  ///< [W], broadcast over rows: element (r, c) at offset + c
  Scalar,  ///< shape null or []: one element
};

/// A variable of the expression and where it reads.
struct ElementwiseOperand {
  std::string name;
  OperandKind kind = OperandKind::Row;
  int input = 0;            ///< index into the definition's inputs
  std::string width_axis;   ///< Row and Column: the tensor's last axis
  std::string offset_text;  ///< column_offset as written ("0" when absent)
  std::string offset_code;  ///< column_offset in C over ka_axis_<name>
};

/// How ka_bind obtains an axis value from the tensors it is given.
struct AxisSource {
  std::string name;
  std::string code;  ///< C: "inputs[0].shape[1]", "14336LL", or an expression over other axes
};

struct ElementwiseProblem {
  std::string family;
  ElementwiseExpr expression;
  std::vector<ElementwiseOperand> operands;  ///< the variables the expression uses, by name
  std::vector<std::string> row_axes;         ///< the output's leading axes
  std::string column_axis;                   ///< the output's last axis
  std::vector<std::string> axes;             ///< every axis of the definition, in order
  /// Every axis in an order where an expression only names axes before it; empty when some
  /// axis cannot be recovered from the tensors (a var axis no shape names), which only matters
  /// to ka_bind.
  std::vector<AxisSource> axis_sources;
  std::string axis_sources_field;    ///< where axis_sources went wrong ("axes.seq")
  std::string axis_sources_problem;  ///< and why, when it is empty
};

/// C code (int64 arithmetic, Python's floor division and modulo) of an axis expression: the
/// language of core/expr.h without comparisons, `and`/`or`/`not` and `**`. Axis names become
/// `ka_axis_<name>`. Throws ExprError on a syntax error or an unsupported operator, or a name
/// that is not in `axes`.
std::string axis_expression_code(std::string_view expression, const std::vector<std::string>& axes);

/// ka_problem.h for `problem`, in the form `kernel`'s target and build need.
std::string generate_elementwise_header(const ElementwiseProblem& problem,
                                        const Definition& definition, const KernelTemplate& kernel);

}  // namespace kernelarc
