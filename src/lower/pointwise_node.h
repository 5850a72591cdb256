// One element-wise node being lowered: its operands resolved to element getters at broadcast
// coords, and its result registered as a pointwise tensor (shared by the element-wise and the
// data-movement op tables).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "lower/lowering.h"

namespace kernelarc::lowering {

/// Builds the pointwise tensor of one node: resolves operands and wraps the op's formula.
class PointwiseNode {
 public:
  PointwiseNode(Lowering& lowering, const GraphNode& node)
      : lowering_(lowering), node_(node), origin_(fmt::format("{} (op {})", node.op, node.id)) {
    const GraphValue& out = lowering.graph.value(node.output());
    shape_ = out.shape;
    dtype_ = *out.dtype;
  }

  bool float_result() const { return !is_integer_dtype(dtype_); }
  const std::string& origin() const { return origin_; }
  const std::vector<SymSize>& shape() const { return shape_; }

  /// An operand: (ctx, out coords) -> EXPR, converted to float when the result is float.
  using Getter = std::function<Json(Ctx&, const Coords&)>;
  struct Operand {
    Getter get;
    bool integer = false;
  };

  /// The tensor of an operand value, in the shape the node is computed over.
  int operand_tensor(int64_t value) {
    const int id = lowering_.tensor_of(value, origin_);
    const auto same = in_product_shape_.find(id);
    return same == in_product_shape_.end() ? id : same->second;
  }

  Operand operand(const GraphArg* arg, bool to_float) {
    if (!arg || arg->is_none()) throw Unsupported(origin_ + ": a required operand is missing");
    Operand result;
    if (const auto value = arg->as_value()) {
      const int id = operand_tensor(*value);
      const auto shape = lowering_.tensor(id).shape;
      result.integer = is_integer_dtype(lowering_.tensor(id).dtype);
      result.get = [id, shape](Ctx& ctx, const Coords& coords) {
        return ctx.lowering.element(ctx, id, broadcast_coords(shape, coords));
      };
    } else if (arg->kind == GraphArg::Kind::Float) {
      const double number = arg->number;
      result.get = [number](Ctx&, const Coords&) { return flit(number); };
    } else if (arg->kind == GraphArg::Kind::Int || arg->kind == GraphArg::Kind::Bool) {
      const Json literal =
          arg->kind == GraphArg::Kind::Bool ? ilit(arg->flag ? 1 : 0) : size_expr(arg->integer);
      result.integer = true;
      result.get = [literal](Ctx&, const Coords&) { return literal; };
    } else if (arg->kind == GraphArg::Kind::Input) {
      const GraphInput* input = lowering_.graph.find_input(arg->text);
      const auto dtype = dtype_from_name(input->scalar_dtype);
      result.integer = dtype && is_integer_dtype(*dtype);
      const std::string name = arg->text;
      result.get = [name](Ctx& ctx, const Coords&) {
        return ctx.lowering.load(ctx, name, SymSize::constant(0), {}, {});
      };
    } else {
      throw Unsupported(fmt::format("{}: an operand of kind {} is not lowered", origin_,
                                    static_cast<int>(arg->kind)));
    }
    if (to_float && result.integer) {
      Getter inner = std::move(result.get);
      result.get = [inner](Ctx& ctx, const Coords& coords) {
        return op("float", {inner(ctx, coords)});
      };
      result.integer = false;
    }
    return result;
  }

  /// Operand `position` (or keyword `name`), float when the result is.
  Operand arg(std::size_t position, std::string_view name = {}) {
    return operand(node_.arg(position, name), float_result());
  }

  /// A float argument that may be a constant or a float scalar input ({"input": name}).
  Operand number_arg(std::size_t position, std::string_view name, double fallback) {
    const GraphArg* arg = node_.arg(position, name);
    if (!arg || arg->is_none()) {
      return {[fallback](Ctx&, const Coords&) { return flit(fallback); }, false};
    }
    return operand(arg, true);
  }

  double float_arg(std::size_t position, std::string_view name, double fallback) const {
    const GraphArg* arg = node_.arg(position, name);
    if (!arg || arg->is_none()) return fallback;
    if (const auto number = arg->as_float()) return *number;
    throw Unsupported(fmt::format("{}: argument {} must be a constant number", origin_, name));
  }

  /// For an element-wise node that reads a matrix product through a reshape (a linear layer's
  /// [B*S, N] product viewed as [B, S, N], plus a residual): computes the node over the
  /// product's own shape, with its other operands read as that shape, and makes the node's
  /// result a reshape view of it, so that the product's kernel can take the node as its
  /// epilogue. True when it applies: every other tensor operand is a contiguous stored tensor of
  /// the node's shape, another reshape of a tensor of the product's shape, or a single element.
  /// Call before the first operand(); only for nodes whose formula does not read coords.
  bool compute_in_product_shape();

  /// Registers the result tensor computed by `formula` from the operands' expressions.
  void define(std::vector<Operand> operands,
              std::function<Json(std::vector<Json>&, Ctx&, const Coords&)> formula) {
    const int id = add_pointwise(lowering_, shape_, dtype_, origin_,
                                 [operands = std::move(operands), formula = std::move(formula)](
                                     Ctx& ctx, const Coords& coords) {
                                   std::vector<Json> values;
                                   for (const auto& operand : operands)
                                     values.push_back(operand.get(ctx, coords));
                                   return formula(values, ctx, coords);
                                 });
    computed_ = id;
    lowering_.value_tensor[node_.output()] = result_shape_ ? reshape_view_of(id) : id;
  }

  /// The tensor define() computed (of shape()): the node's result, or what it reshapes.
  int computed_tensor() const { return computed_; }

  void define_op(const std::string& name, std::vector<Operand> operands) {
    define(std::move(operands),
           [name](std::vector<Json>& v, Ctx&, const Coords&) { return op(name, v); });
  }

  Lowering& lowering() { return lowering_; }
  const GraphNode& node() const { return node_; }
  DType dtype() const { return dtype_; }

 private:
  Lowering& lowering_;
  const GraphNode& node_;
  std::string origin_;
  /// The node's result as a contiguous reshape of `computed` (of shape shape_).
  int reshape_view_of(int computed);

  std::vector<SymSize> shape_;  ///< the shape the node is computed over
  DType dtype_;
  /// Set by compute_in_product_shape: the node's own shape, and each operand tensor's
  /// equivalent of the product's shape.
  std::optional<std::vector<SymSize>> result_shape_;
  std::map<int, int> in_product_shape_;
  int computed_ = -1;
};

bool lower_data_movement(PointwiseNode& p, std::string_view name);

}  // namespace kernelarc::lowering
