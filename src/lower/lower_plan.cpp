// The driver: graph values to tensors, nodes in order through the op classes, outputs placed
// into the kernels that can write them, and the plan emitted.
#include "lower/lower_plan.h"

#include <algorithm>
#include <functional>

#include <fmt/format.h>

#include "lower/functionalize.h"
#include "lower/lowering.h"
#include "lower/readable_axes.h"
#include "lower/simplify_plan.h"

namespace kernelarc {
namespace lowering {
namespace {

std::string origin_of(const GraphNode& node) {
  return fmt::format("{} (op {})", node.op, node.id);
}

/// A small constant: a where() chain over its flat index (kept short: constants this size are
/// masks and tables of a few entries).
int constant_tensor(Lowering& lowering, const GraphValue& value, const GraphBuffer& buffer) {
  constexpr std::size_t kMaxInlined = 64;
  if (buffer.data.size() > kMaxInlined) {
    throw Unsupported(
        fmt::format("value {}: a constant of {} elements is not lowered (at most {} "
                    "are inlined; a constant buffer kind would be needed)",
                    value.id, buffer.data.size(), kMaxInlined));
  }
  const bool integer = buffer.dtype && is_integer_dtype(*buffer.dtype);
  const auto data = buffer.data;
  const auto shape = value.shape;
  const auto strides = value.stride;
  const auto offset = value.offset;
  return add_pointwise(lowering, value.shape, value.dtype.value_or(DType::Float32),
                       fmt::format("constant value {}", value.id), [=](Ctx&, const Coords& coords) {
                         Json flat = size_expr(offset);
                         for (std::size_t d = 0; d < shape.size(); ++d) {
                           flat = iadd(flat, imul(size_expr(strides[d]), coords[d]));
                         }
                         const auto literal = [&](double x) {
                           return integer ? ilit(static_cast<int64_t>(x)) : flit(x);
                         };
                         Json result = literal(data.back());
                         for (std::size_t i = data.size() - 1; i-- > 0;) {
                           result = op("where", {op("eq", {flat, ilit(static_cast<int64_t>(i))}),
                                                 literal(data[i]), result});
                         }
                         return result;
                       });
}

}  // namespace

int Lowering::tensor_of(int64_t value_id, std::string_view user) {
  if (const auto found = value_tensor.find(value_id); found != value_tensor.end()) {
    return found->second;
  }
  const GraphValue& value = graph.value(value_id);
  if (!value.dtype) {
    throw Unsupported(fmt::format("{}: value {} has dtype {}, which is not lowered", user, value_id,
                                  value.dtype_name));
  }
  for (const auto& size : value.shape) {
    if (!size.is_monomial()) {
      throw Unsupported(fmt::format("{}: value {} has size \"{}\", not a monomial of the axes",
                                    user, value_id, size.text()));
    }
  }
  const GraphBuffer& buffer = graph.buffer(value.buffer);
  int id = -1;
  if (buffer.source == GraphBuffer::Source::Input) {
    Tensor tensor;
    tensor.kind = Tensor::Kind::Stored;
    tensor.shape = value.shape;
    tensor.dtype = *value.dtype;
    tensor.origin = fmt::format("input {}", buffer.input);
    tensor.stored = StoredAt{buffer.input, value.offset, value.stride, -1};
    id = add_tensor(std::move(tensor));
  } else if (buffer.source == GraphBuffer::Source::Constant) {
    id = constant_tensor(*this, value, buffer);
  } else {
    const GraphNode& producer = graph.node(buffer.node);
    int64_t base_value = -1;
    for (const int64_t output : producer.outputs) {
      if (output >= 0 && graph.value(output).buffer == value.buffer) {
        base_value = output;
        break;
      }
    }
    const auto base = value_tensor.find(base_value);
    if (base_value < 0 || base_value == value_id || base == value_tensor.end()) {
      throw Unsupported(
          fmt::format("{}: value {} views the result of {} (op {}), which was not "
                      "lowered",
                      user, value_id, producer.op, producer.id));
    }
    const int base_id = base->second;
    const GraphValue& base_graph = graph.value(base_value);
    const auto shape = value.shape;
    const auto strides = value.stride;
    const auto offset = value.offset;
    const auto base_shape = base_graph.shape;
    const auto base_strides = base_graph.stride;
    id = add_pointwise(*this, value.shape, *value.dtype, fmt::format("view value {}", value_id),
                       [=](Ctx& ctx, const Coords& coords) {
                         return ctx.lowering.element(
                             ctx, base_id,
                             view_to_base_coords(ctx.lowering, shape, strides, offset, base_shape,
                                                 base_strides, coords));
                       });
    Tensor& tensor = this->tensor(id);
    tensor.view_base = base_id;
    tensor.view_offset = value.offset;
    tensor.view_strides = value.stride;
  }
  value_tensor[value_id] = id;
  return id;
}

namespace {

/// True when the value's strides are those of a contiguous tensor with its dims permuted (so a
/// temp of product(shape) elements holds it in that layout).
bool is_dense(const Lowering& lowering, const GraphValue& value) {
  std::vector<std::size_t> order;
  for (std::size_t d = 0; d < value.rank(); ++d) {
    if (!value.shape[d].is_one()) order.push_back(d);
  }
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return lowering.max_traced(value.stride[a]) > lowering.max_traced(value.stride[b]);
  });
  SymSize expected = SymSize::constant(1);
  for (std::size_t i = order.size(); i-- > 0;) {
    if (!(value.stride[order[i]] == expected)) return false;
    expected = expected * value.shape[order[i]];
  }
  return true;
}

/// How many times the graph reads the buffer of `value_id` (through any view of it): each
/// reference in a compute node's arguments, and each graph output.
int buffer_reads(const OpGraph& graph, int64_t value_id) {
  const int64_t buffer = graph.value(value_id).buffer;
  const auto on_buffer = [&](int64_t id) { return id >= 0 && graph.value(id).buffer == buffer; };
  int reads = 0;
  const std::function<void(const GraphArg&)> count = [&](const GraphArg& arg) {
    if (const auto id = arg.as_value(); id && on_buffer(*id)) ++reads;
    for (const auto& item : arg.items) count(item);
  };
  for (const auto& node : graph.nodes) {
    if (node.view) continue;
    for (const auto& arg : node.args) count(arg);
    for (const auto& [name, arg] : node.kwargs) count(arg);
  }
  for (const auto& output : graph.outputs) reads += on_buffer(output.value);
  return reads;
}

/// Inlining recomputes a value at every use, so a chain of values each read twice would grow
/// its expression exponentially. A node result read more than once whose expression is larger
/// than this is stored to a temp by a pointwise kernel of its own, and its users load it.
constexpr int kMaxReusedExpressionNodes = 96;

void bound_inlining(Lowering& lowering, const GraphNode& node) {
  for (const int64_t output : node.outputs) {
    const auto found =
        output >= 0 ? lowering.value_tensor.find(output) : lowering.value_tensor.end();
    if (found == lowering.value_tensor.end()) continue;
    int id = found->second;
    // A node computed over a product's shape is bounded where it is computed.
    if (const int base = lowering.tensor(id).view_base;
        base >= 0 && lowering.tensor(base).in_product_shape) {
      id = base;
    }
    const Tensor& tensor = lowering.tensor(id);
    if (tensor.kind != Tensor::Kind::Pointwise || tensor.view_base >= 0 || tensor.stored) continue;
    if (buffer_reads(lowering.graph, output) < 2) continue;
    Coords coords;
    for (std::size_t d = 0; d < tensor.shape.size(); ++d)
      coords.push_back(idx(static_cast<int>(d)));
    Ctx dry{lowering, static_cast<int>(lowering.kernels.size()), Json::object(), true};
    int nodes = 0;
    try {
      nodes = expression_nodes(lowering.element(dry, id, coords));
    } catch (const NotHere&) {
      continue;
    } catch (const Unsupported&) {
      continue;  // reported where a user needs it
    }
    if (nodes <= kMaxReusedExpressionNodes) continue;
    lowering.materialize_now(id);
    lowering.notes.push_back(
        fmt::format("{}: an expression of {} nodes read {} times is stored "
                    "rather than inlined",
                    lowering.tensor(id).origin, nodes, buffer_reads(lowering.graph, output)));
  }
}

/// An in-place op (`copy_`, `add_`, ...) whose written buffer nothing reads afterwards: no
/// compute node after it and no graph output. Such writes land in the reference's own scratch
/// (a module buffer's clone, a batch norm's running statistics) and change no output.
bool is_dead_in_place_write(const OpGraph& graph, const GraphNode& node) {
  if (!node.base_name().ends_with("_") || node.args.empty()) return false;
  const auto target = node.args[0].as_value();
  if (!target) return false;
  const int64_t buffer = graph.value(*target).buffer;
  const auto on_buffer = [&](int64_t id) { return id >= 0 && graph.value(id).buffer == buffer; };
  const std::function<bool(const GraphArg&)> reads = [&](const GraphArg& arg) {
    if (const auto id = arg.as_value(); id && on_buffer(*id)) return true;
    return std::any_of(arg.items.begin(), arg.items.end(), reads);
  };
  for (const auto& later : graph.nodes) {
    if (later.id <= node.id || later.view) continue;
    if (std::any_of(later.args.begin(), later.args.end(), reads)) return false;
    for (const auto& [name, arg] : later.kwargs) {
      if (reads(arg)) return false;
    }
  }
  return std::none_of(graph.outputs.begin(), graph.outputs.end(),
                      [&](const GraphOutput& output) { return on_buffer(output.value); });
}

void lower_node(Lowering& lowering, const GraphNode& node) {
  if (!node.view && is_dead_in_place_write(lowering.graph, node)) {
    lowering.notes.push_back(
        fmt::format("{} (op {}) writes a buffer nothing reads afterwards; "
                    "it is left out",
                    node.op, node.id));
    return;
  }
  if (node.view) {
    for (const int64_t output : node.outputs) {
      if (output >= 0) lowering.tensor_of(output, origin_of(node));
    }
    return;
  }
  if (lower_view_or_pointwise(lowering, node) || lower_reduction(lowering, node) ||
      lower_scan(lowering, node) || lower_sort(lowering, node) || lower_scatter(lowering, node) ||
      lower_matmul(lowering, node) || lower_window(lowering, node)) {
    // A node result keeps its graph layout so that views of it can load a stored copy directly.
    for (const int64_t output : node.outputs) {
      if (output < 0) continue;
      const auto found = lowering.value_tensor.find(output);
      if (found == lowering.value_tensor.end()) continue;
      Tensor& tensor = lowering.tensor(found->second);
      const GraphValue& value = lowering.graph.value(output);
      if (tensor.layout_strides.empty() && value.offset.is_zero() && tensor.shape == value.shape &&
          is_dense(lowering, value)) {
        tensor.layout_strides = value.stride;
      }
    }
    bound_inlining(lowering, node);
    return;
  }
  std::string_view name = node.base_name();
  if (is_whole_tensor_write(name)) {
    // What functionalize_in_place_writes left: a slice written, or old contents still read.
    throw Unsupported(fmt::format(
        "{} (op {}) writes in place into a slice of a tensor, or under a view made before the "
        "write and read after it; such aliasing is not lowered",
        node.op, node.id));
  }
  if (name.find("convolution") != std::string_view::npos || name.starts_with("conv")) {
    throw Unsupported(fmt::format("{}: convolutions are not lowered (op {})", node.op, node.id));
  }
  throw Unsupported(
      fmt::format("{}: this op is not lowered (op {}); the tracer should decompose "
                  "it or the lowering learn it",
                  node.op, node.id));
}

Json emit_plan(Lowering& lowering) {
  Json kernels = Json::array();
  for (const auto& kernel : lowering.kernels) {
    if (kernel.stores.empty()) continue;  // a result nothing uses
    Json json = kernel.json;
    json["loads"] = kernel.loads;
    json["stores"] = kernel.stores;
    kernels.push_back(std::move(json));
  }
  Json buffers = Json::array();
  for (std::size_t i = 0; i < lowering.definition.inputs.size(); ++i) {
    const auto& input = lowering.definition.inputs[i];
    buffers.push_back({{"name", input.name},
                       {"kind", "input"},
                       {"index", i},
                       {"dtype", std::string(dtype_name(input.dtype))}});
  }
  for (std::size_t i = 0; i < lowering.definition.outputs.size(); ++i) {
    const auto& output = lowering.definition.outputs[i];
    buffers.push_back({{"name", output.name},
                       {"kind", "output"},
                       {"index", i},
                       {"dtype", std::string(dtype_name(output.dtype))}});
  }
  for (const auto& temp : lowering.buffers) buffers.push_back(temp);
  return {{"version", 1}, {"buffers", buffers}, {"kernels", kernels}};
}

void check_definition_matches(const OpGraph& graph, const Definition& definition) {
  for (const auto& input : graph.inputs) {
    const bool known = std::any_of(definition.inputs.begin(), definition.inputs.end(),
                                   [&](const auto& spec) { return spec.name == input.name; });
    if (!known) {
      throw Unsupported(
          fmt::format("graph input \"{}\" is not an input of the definition", input.name));
    }
  }
  for (const auto& spec : definition.outputs) {
    const bool traced = std::any_of(graph.outputs.begin(), graph.outputs.end(),
                                    [&](const auto& output) { return output.name == spec.name; });
    if (!traced) {
      throw Unsupported(
          fmt::format("output \"{}\" of the definition is not in the graph", spec.name));
    }
  }
}

}  // namespace
}  // namespace lowering

PlanLowering lower_to_plan(const OpGraph& graph, const Definition& definition,
                           bool simplify_indices) {
  using namespace lowering;
  PlanLowering result;
  try {
    check_definition_matches(graph, definition);
    Lowering lowering(graph, definition);
    for (const auto& input : definition.inputs) {
      if (input.dtype == DType::Float64) lowering.compute_dtype = DType::Float64;
    }
    for (const auto& output : definition.outputs) {
      if (output.dtype == DType::Float64) lowering.compute_dtype = DType::Float64;
    }
    for (const auto& value : graph.values) {
      if (!value.dtype) {
        throw Unsupported(
            fmt::format("value {} has dtype {}, which is not lowered", value.id, value.dtype_name));
      }
    }
    for (const auto& node : graph.nodes) lower_node(lowering, node);
    for (const auto& output : graph.outputs) {
      const auto spec = std::find_if(definition.outputs.begin(), definition.outputs.end(),
                                     [&](const auto& o) { return o.name == output.name; });
      if (spec == definition.outputs.end()) continue;  // traced but not a definition output
      const int id = lowering.tensor_of(output.value, "output " + output.name);
      const Tensor& tensor = lowering.tensor(id);
      const auto strides = contiguous_strides(tensor.shape);
      // A scatter writes the output it is returned as itself.
      if (tensor.stored && tensor.stored->buffer == output.name &&
          tensor.stored->strides == strides)
        continue;
      lowering.store_anywhere(id, output.name, strides);
    }
    result.plan = emit_plan(lowering);
    if (simplify_indices) result.plan = simplify_plan(result.plan, definition);
    result.plan = name_readable_axes(result.plan, definition);
    result.notes = std::move(lowering.notes);
    result.ok = true;
  } catch (const Unsupported& error) {
    result.ok = false;
    result.reason = error.what();
  } catch (const ExprError& error) {
    result.ok = false;
    result.reason = fmt::format("a size does not evaluate: {}", error.what());
  }
  return result;
}

}  // namespace kernelarc
