// What the family matchers (family_match_row.cpp, family_match_pointwise.cpp) share: the
// graph's outputs as Terms, the definition, and the element-wise expression writer.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lower/family_match.h"
#include "lower/family_match_terms.h"

namespace kernelarc {

struct MatchContext {
  const OpGraph& graph;
  const Definition& definition;
  TermBuilder terms;
  std::vector<std::pair<std::string, TermPtr>> outputs;  ///< (name, what it computes)

  const TensorSpec* input_spec(const std::string& name) const;
  const TensorSpec* output_spec(const std::string& name) const;
  /// The graph value of a graph output (its shape is what the reference returns).
  const GraphValue& output_value(std::size_t index) const;
};

/// A refusal with its reason.
FamilyMatch no_match(std::string reason);

/// The variable a Leaf, Scalar or non-element-wise term stands for in an expression, or
/// nullopt with `why` set.
using TermNamer = std::function<std::optional<std::string>(const Term& term, std::string* why)>;

/// The element-wise expression (synth/elementwise_expr.h syntax) of `term`: its element-wise ops
/// written out, everything else named by `namer`. nullopt with `why` when a literal has no
/// spelling (inf, nan) or the namer refuses a term.
std::optional<std::string> expression_text(const Term& term, const TermNamer& namer,
                                           std::string* why);

/// "float32, float16 or bfloat16": what the families' tensors may be.
bool is_family_float(DType dtype);

/// Every Op term named `op` under `term` (itself included), outermost first.
void collect_ops(const Term& term, const std::string& op, std::vector<const Term*>& found);

/// A matrix operand of mm: input `input` read as [rows, cols], either as stored or transposed.
struct MatrixRead {
  std::string input;
  bool as_stored = true;
};

/// How an mm operand reads its input, or nullopt with `why` (a computed value, another view).
std::optional<MatrixRead> matrix_read(const OpGraph& graph, const Term& term, std::string* why);

/// Each matcher returns nullopt when the graph does not have its family's shape at all, else a
/// match or the reason this family cannot serve it.
std::optional<FamilyMatch> match_row_family(MatchContext& context);
std::optional<FamilyMatch> match_gemm_family(MatchContext& context);
std::optional<FamilyMatch> match_elementwise_family(MatchContext& context);
std::optional<FamilyMatch> match_mlp_family(MatchContext& context);

}  // namespace kernelarc
