// The op graph the tracer writes (docs/RECOGNITION.md §1), parsed and validated into C++.
//
// parse_op_graph checks the whole document (every field's type, every value/buffer/node id it
// refers to) and raises InputError naming the JSON path ("nodes[3].args[1]: ...") on malformed
// input, so the lowering and the family matchers can rely on a consistent graph. It does not
// judge whether the ops are supported: that is the lowering's business. It does rewrite the
// in-place copies that are pure copies in effect (lower/functionalize.h), so that every reader
// of the graph sees them as such.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/dtype.h"
#include "core/json_fields.h"
#include "lower/sym_size.h"

namespace kernelarc {

/// One argument of a node, as recorded: {"value": id}, {"float": x}, {"int": "expr"}, ...
struct GraphArg {
  enum class Kind { Value, Float, Int, Bool, DType, String, List, None, Input, Device, Other };
  Kind kind = Kind::None;
  int64_t value = -1;           ///< Value: the value id
  double number = 0;            ///< Float (inf, -inf and nan included)
  SymSize integer;              ///< Int
  bool flag = false;            ///< Bool
  std::string text;             ///< DType / String: the name; Input: the scalar input's name;
                                ///< Device / Other: as written
  std::vector<GraphArg> items;  ///< List

  // Typed views; nullopt when the argument is of another kind.
  std::optional<int64_t> as_value() const;
  /// A Float, or an Int / Bool that is a constant (torch passes `alpha=1` as an int).
  std::optional<double> as_float() const;
  std::optional<SymSize> as_int_expr() const;
  /// An Int that is a constant.
  std::optional<int64_t> as_int() const;
  std::optional<bool> as_bool() const;
  /// A List of constant Ints, or a single constant Int as a list of one.
  std::optional<std::vector<int64_t>> as_int_list() const;
  /// A List of Ints (symbolic sizes, e.g. a view's shape), or a single Int as a list of one.
  std::optional<std::vector<SymSize>> as_int_expr_list() const;
  /// A List of Values (cat/stack operands).
  std::optional<std::vector<int64_t>> as_value_list() const;
  std::optional<DType> as_dtype() const;
  std::optional<std::string> as_string() const;
  bool is_none() const { return kind == Kind::None; }
};

/// A tensor the trace saw: a strided view of a buffer.
struct GraphValue {
  int64_t id = 0;
  std::string dtype_name;      ///< as written ("bfloat16", "complex64", ...)
  std::optional<DType> dtype;  ///< nullopt for a dtype kernelarc has no type for (complex)
  std::vector<SymSize> shape;
  std::vector<SymSize> stride;
  SymSize offset;
  int64_t buffer = 0;

  std::size_t rank() const { return shape.size(); }
};

struct GraphBuffer {
  enum class Source { Input, Node, Constant };
  int64_t id = 0;
  Source source = Source::Input;
  std::string input;  ///< Input: the definition input's name
  int64_t node = -1;  ///< Node: the node whose output it stores
  // Constant: a small tensor, row-major.
  std::string dtype_name;
  std::optional<DType> dtype;
  std::vector<int64_t> shape;
  std::vector<double> data;
};

struct GraphNode {
  int64_t id = 0;
  std::string op;  ///< ATen overload name, "aten.add.Tensor"
  bool view = false;
  std::vector<GraphArg> args;
  std::vector<std::pair<std::string, GraphArg>> kwargs;
  /// Value ids of the results, -1 for a result that is not a tensor (or not recorded).
  std::vector<int64_t> outputs;

  /// The op name without namespace and overload: "add" for "aten.add.Tensor".
  std::string_view base_name() const;
  /// The overload: "Tensor" for "aten.add.Tensor", "" for "aten.relu".
  std::string_view overload() const;
  /// The argument at `position`, else the keyword `name`, else nullptr (the schema's default:
  /// the dispatcher drops trailing arguments that equal their defaults).
  const GraphArg* arg(std::size_t position, std::string_view name = {}) const;
  const GraphArg* kwarg(std::string_view name) const;
  /// The first output's value id.
  int64_t output() const { return outputs.empty() ? -1 : outputs.front(); }
};

struct GraphInput {
  std::string name;
  int64_t value = -1;        ///< a tensor input's value; -1 for a scalar
  std::string scalar_dtype;  ///< a scalar input's dtype name ("float32", "int64")
  bool is_scalar() const { return value < 0; }
};

struct GraphOutput {
  std::string name;
  int64_t value = -1;
};

struct GraphAxis {
  std::string name;
  std::string kind;             ///< "var", "const" or "expr"
  int64_t value = 0;            ///< const
  std::vector<int64_t> traced;  ///< var: the values of the traces
};

class OpGraph {
 public:
  int version = 1;
  std::string torch_version;
  std::string trace;  ///< "meta" or "cpu"
  std::vector<GraphAxis> axes;
  std::vector<GraphInput> inputs;
  std::vector<GraphValue> values;    ///< values[i].id == i
  std::vector<GraphBuffer> buffers;  ///< buffers[i].id == i
  std::vector<GraphNode> nodes;      ///< nodes[i].id == i, in execution order
  std::vector<GraphOutput> outputs;

  const GraphValue& value(int64_t id) const { return values.at(static_cast<std::size_t>(id)); }
  const GraphBuffer& buffer(int64_t id) const { return buffers.at(static_cast<std::size_t>(id)); }
  const GraphNode& node(int64_t id) const { return nodes.at(static_cast<std::size_t>(id)); }
  const GraphBuffer& buffer_of(int64_t value_id) const { return buffer(value(value_id).buffer); }

  /// The node with `value_id` among its outputs; nullptr for an input's or a constant's value.
  const GraphNode* producer(int64_t value_id) const;
  /// The nodes that take `value_id` as an argument (in args, kwargs or lists), in order.
  std::vector<const GraphNode*> users(int64_t value_id) const;
  /// The graph output names of `value_id` (a value may be returned more than once).
  std::vector<std::string> output_names(int64_t value_id) const;
  /// The tensor input whose value is `value_id`, or nullptr.
  const GraphInput* input_of_value(int64_t value_id) const;
  const GraphInput* find_input(std::string_view name) const;
  const GraphAxis* find_axis(std::string_view name) const;

  /// Walks up from `value_id` through view nodes and value-preserving casts (_to_copy / to /
  /// clone / contiguous / copy / alias to the same dtype or a wider one that represents every
  /// value exactly, e.g. bfloat16 -> float32) and returns the value where the walk stops.
  int64_t follow_views_and_casts(int64_t value_id) const;
  /// Same, through view nodes only.
  int64_t follow_views(int64_t value_id) const;

 private:
  friend OpGraph parse_op_graph(const OrderedJson& json, std::string_view where);
  std::vector<int64_t> producer_of_;  ///< value id -> node id or -1
};

/// Throws InputError "<where>: <path>: <problem>" on malformed input.
OpGraph parse_op_graph(const OrderedJson& json, std::string_view where);

/// True when casting `from` to `to` keeps every value exactly (same type, a wider float, a
/// wider integer, bool to anything, a small integer to a float that holds it).
bool is_value_preserving_cast(DType from, DType to);

}  // namespace kernelarc
