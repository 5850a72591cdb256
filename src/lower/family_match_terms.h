// The op graph read back as expression trees for the family matchers (family_match*.cpp).
//
// A Term is what one graph value computes, with the ATen spelling normalised away: float casts
// are transparent (the families compute in float32 and round once), `pow(x, 2)` and `square(x)`
// are `x * x`, `add(a, b, alpha)` is `a + alpha * b`, a view of an input is a Leaf that reads
// that input through the view's strides and offset. Whatever the matchers do not understand
// (a conv, a view of a computed value that reorders elements, an integer cast) is an Opaque
// term that names the op, so a matcher can say why it does not match.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lower/op_graph.h"

namespace kernelarc {

struct Term;
using TermPtr = std::shared_ptr<const Term>;

struct Term {
  enum class Kind {
    Leaf,      ///< a tensor input read through `access`
    Scalar,    ///< a scalar input (Python number) by name
    Constant,  ///< a float literal
    Op,        ///< `op` applied to `args`
    Opaque,    ///< not understood; `op` says what it is
  };
  Kind kind = Kind::Opaque;
  /// Op: add sub mul div neg relu gelu gelu_tanh silu sigmoid tanh exp log log1p expm1 sqrt
  /// rsqrt abs min max, where (args cond, a, b), lt le gt ge eq ne (a boolean: where's
  /// condition, or 1 and 0 where read as a number) (element-wise); sum mean amax amin var
  /// (reductions over `dims`); softmax log_softmax
  /// logsumexp (over `dims`); layer_norm (args x, weight?, bias? as given; `number` = eps);
  /// mm (args a, b). Opaque: a description ("aten.convolution.default").
  std::string op;
  std::vector<TermPtr> args;
  int64_t value = -1;  ///< the graph value holding the result (its shape); -1 for literals
  std::string input;   ///< Leaf, Scalar: the definition input's name
  /// Leaf: the value whose shape, strides and offset address the input's own buffer.
  int64_t access = -1;
  double number = 0;          ///< Constant: the literal; layer_norm: eps; var: the correction
  std::vector<int64_t> dims;  ///< reductions, softmax, layer_norm: the axes, >= 0
  bool keepdim = false;
  /// layer_norm: whether weight / bias were given (args[1] and args[2] then hold them).
  bool has_weight = false, has_bias = false;
};

/// Reads the graph's values as Terms, each built once.
class TermBuilder {
 public:
  explicit TermBuilder(const OpGraph& graph) : graph_(graph) {}

  TermPtr term(int64_t value_id);
  const OpGraph& graph() const { return graph_; }

 private:
  TermPtr build(int64_t value_id);
  TermPtr build_node(const GraphNode& node, int64_t value_id, std::size_t output_index);
  TermPtr arg_term(const GraphNode& node, std::size_t position, std::string_view name = {});
  TermPtr view_of(const GraphNode& node, int64_t value_id);
  TermPtr cast_of(const GraphNode& node, int64_t value_id);
  TermPtr reduction(const GraphNode& node, int64_t value_id, const std::string& op);
  TermPtr piecewise_activation(const GraphNode& node, const std::string& name, int64_t value_id);

  const OpGraph& graph_;
  std::map<int64_t, TermPtr> built_;
};

TermPtr make_op(std::string op, std::vector<TermPtr> args, int64_t value = -1);
TermPtr make_constant(double number);
TermPtr make_opaque(std::string what, int64_t value = -1);

/// The first Opaque term under `term` (itself included), or nullptr.
const Term* find_opaque(const Term& term);

/// A canonical text of the computation: equal texts compute the same thing the same way.
std::string term_key(const Term& term);

/// The names of the inputs (tensors and scalars) a term reads, in first-use order.
std::vector<std::string> term_inputs(const Term& term);

/// Whether the op of `term` is one the element-wise expression language has.
bool is_elementwise_op(const std::string& op);

/// Whether `op` is a comparison (lt le gt ge eq ne), which gives a boolean.
bool is_comparison_op(std::string_view op);
/// A comparison's operator in the expression language ("<" for lt); nullptr for another op.
const char* comparison_symbol(std::string_view op);

/// How an element-wise operand reads its input at output element (rows..., c) of an output of
/// shape `out_shape`; see classify_leaf.
struct LeafAccess {
  enum class Kind { Row, Column, Scalar0D };
  Kind kind = Kind::Row;
  SymSize column_offset;  ///< Row, Column: where column 0 of the output reads
  SymSize width;          ///< Row, Column: the input's last extent
};

/// A Leaf read at every element of an output of shape `out_shape` (broadcast right-aligned):
/// a row tensor of the output's leading extents read row-major at a column offset, a
/// per-column vector [W] at a column offset, or a 0-D tensor; nullopt (with `why`) otherwise,
/// e.g. a transposed or strided read.
std::optional<LeafAccess> classify_leaf(const OpGraph& graph, const Term& leaf,
                                        const std::vector<SymSize>& out_shape, std::string* why);

/// "[batch_size, 4096]".
std::string shape_string(const std::vector<SymSize>& shape);

}  // namespace kernelarc
