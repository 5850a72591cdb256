// Scatters: index_put (x[i, j] = v, x[i] += v), index_add, index_copy, scatter and scatter_add;
// and index_put through a boolean mask with one value (x[mask] = v), which is pointwise.
// The result is the output it is returned as, or a temp, that first gets a copy of the base, then a
// scatter kernel over the source's index space writes (or, accumulating, adds) each source element
// at the destination its indices name. In-place forms arrive functional (lower/functionalize.h), so
// the base is never overwritten: a plan never writes an input.
#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "lower/index_list.h"
#include "lower/lowering.h"
#include "lower/node_args.h"

namespace kernelarc::lowering {
namespace {

/// What one scatter op writes: for each point of `domain`, `value` at `destination`.
struct ScatterSpec {
  std::vector<SymSize> domain;
  /// The destination's coords of a point; each coord read from an index tensor is listed in
  /// `checked` (dims of the destination), the others are in range by construction.
  std::function<Coords(Ctx&, const Coords&)> destination;
  std::vector<std::size_t> checked;
  std::function<Json(Ctx&, const Coords&)> value;
  bool accumulate = false;
};

/// The element of tensor `id` as the destination's type: a float unless the destination holds
/// integers.
Json value_element(Ctx& ctx, int id, const Coords& coords, bool integer) {
  return integer ? ctx.lowering.element(ctx, id, coords)
                 : ctx.lowering.float_element(ctx, id, coords);
}

/// index_put(self, indices, values, accumulate): values broadcast over x[indices].
ScatterSpec index_put(Lowering& lowering, const GraphNode& node, const std::vector<SymSize>& shape,
                      bool integer, const std::string& origin) {
  const IndexList indices(lowering, node.arg(1, "indices"), shape, origin);
  const int values = NodeArgs{node, origin}.tensor(lowering, 2, "values");
  const std::vector<SymSize> values_shape = lowering.tensor(values).shape;
  ScatterSpec spec;
  spec.domain = indices.result_shape();
  if (values_shape.size() > spec.domain.size())
    throw Unsupported(origin + ": the values do not broadcast over the indexed elements");
  for (std::size_t d = 0; d < shape.size(); ++d)
    if (indices.indexed_dim(d)) spec.checked.push_back(d);
  spec.destination = [indices](Ctx& ctx, const Coords& coords) {
    return indices.x_coords(ctx, coords);
  };
  spec.value = [values, values_shape, integer](Ctx& ctx, const Coords& coords) {
    return value_element(ctx, values, broadcast_coords(values_shape, coords), integer);
  };
  const GraphArg* accumulate = node.arg(3, "accumulate");
  spec.accumulate = accumulate && accumulate->as_bool().value_or(false);
  return spec;
}

/// index_add / index_copy (self, dim, index, source[, alpha]): source's slice i along dim goes
/// to slice index[i]. scatter / scatter_add (self, dim, index, src | value): src[p] goes to p
/// with its dim coord replaced by index[p], over index's shape. Neither wraps negative indices
/// (torch rejects them).
ScatterSpec along_dim(Lowering& lowering, const GraphNode& node, std::string_view name,
                      const std::vector<SymSize>& shape, bool integer, const std::string& origin) {
  const NodeArgs args{node, origin};
  const auto dim_arg = args.required(1, "dim").as_int();
  if (!dim_arg) throw Unsupported(origin + ": expected a constant dim");
  const auto dim = static_cast<std::size_t>(normalize_dim(*dim_arg, shape.size(), origin));
  const int index = args.tensor(lowering, 2, "index");
  const std::vector<SymSize> index_shape = lowering.tensor(index).shape;
  if (!is_integer_dtype(lowering.tensor(index).dtype))
    throw Unsupported(origin + ": the index must be an integer tensor");
  const bool per_slice = name == "index_add" || name == "index_copy";
  ScatterSpec spec;
  spec.checked = {dim};
  spec.accumulate = name == "index_add" || name == "scatter_add";
  if (const GraphArg* reduce = node.kwarg("reduce"); reduce && !reduce->is_none())
    throw Unsupported(origin + ": scatter with a reduce argument is not lowered");
  const GraphArg& source = args.required(3, per_slice ? "source" : "src");
  int source_id = -1;
  if (const auto value = source.as_value()) source_id = lowering.tensor_of(*value, origin);
  if (per_slice) {
    if (source_id < 0) throw Unsupported(origin + ": the source must be a tensor");
    spec.domain = lowering.tensor(source_id).shape;
    if (spec.domain.size() != shape.size() || index_shape.size() > 1)
      throw Unsupported(origin + ": expected a 1-D index and a source of the self's rank");
  } else {
    spec.domain = index_shape;
    if (spec.domain.size() != shape.size())
      throw Unsupported(origin + ": expected an index of the self's rank");
  }
  spec.destination = [=](Ctx& ctx, const Coords& coords) {
    Coords at = coords;
    const Coords index_at = per_slice ? Coords{coords[dim]} : coords;
    at[dim] = ctx.lowering.element(ctx, index, broadcast_coords(index_shape, index_at));
    return at;
  };
  double alpha = 1;
  if (const GraphArg* alpha_arg = node.arg(4, "alpha"); alpha_arg && name == "index_add") {
    const auto number = alpha_arg->as_float();
    if (!number) throw Unsupported(origin + ": expected a constant alpha");
    alpha = *number;
  }
  if (source_id >= 0) {
    spec.value = [=](Ctx& ctx, const Coords& coords) {
      const Json element = value_element(ctx, source_id, coords, integer);
      if (alpha == 1) return element;
      return integer ? op("mul", {element, ilit(static_cast<int64_t>(alpha))})
                     : fmul(element, flit(alpha));
    };
  } else {
    const auto number = source.as_float();
    if (!number) throw Unsupported(origin + ": expected a tensor or a number to scatter");
    spec.value = [=](Ctx&, const Coords&) {
      return integer ? ilit(static_cast<int64_t>(*number)) : flit(*number);
    };
  }
  return spec;
}

/// A destination coord from an index: kept when inside [0, size), else one that puts the
/// address past the end of the destination (its strides are row-major and positive), where
/// the generated code's range check skips the store and reports the stray index.
Json checked_coord(const Json& coord, const SymSize& size, const SymSize& elements) {
  const Json inside = op("and", {op("ge", {coord, ilit(0)}), op("lt", {coord, size_expr(size)})});
  return op("where", {inside, coord, size_expr(elements)});
}

/// The definition output the result is returned as, when it is one of the result's dtype: the
/// scatter then writes it directly (a temp would cost a copy more).
std::string returned_output(const Lowering& lowering, const GraphNode& node, DType dtype) {
  for (const GraphOutput& output : lowering.graph.outputs) {
    if (output.value != node.output()) continue;
    for (const auto& spec : lowering.definition.outputs)
      if (spec.name == output.name && spec.dtype == dtype) return spec.name;
  }
  return "";
}

/// x[mask] = v (`scores[mask] = -inf`, `y[y < 0] = 0`): index_put with one boolean mask, after
/// Nones only, and a value of one element. The masked elements take v (accumulating: x + v),
/// the others keep x's: a pointwise where, no scatter. -1 when no index is a boolean mask;
/// Unsupported for a mask in any other form, whose result has a data-dependent shape.
int masked_index_put(Lowering& lowering, const GraphNode& node, int base, bool integer,
                     const std::string& origin) {
  const GraphArg* list = node.arg(1, "indices");
  if (!list || list->kind != GraphArg::Kind::List) return -1;
  std::optional<int> mask;
  std::size_t position = 0, tensors = 0;
  for (std::size_t i = 0; i < list->items.size(); ++i) {
    const auto value = list->items[i].as_value();
    if (!value) continue;
    ++tensors;
    const int id = lowering.tensor_of(*value, origin);
    if (lowering.tensor(id).dtype != DType::Bool) continue;
    mask = id;
    position = i;
  }
  if (!mask) return -1;
  const std::string form =
      ": a boolean mask with other indices, or a value of more than one element, makes a "
      "data-dependent shape; x[mask] = v with a mask after Nones and one value is lowered";
  if (tensors != 1) throw Unsupported(origin + form);
  const std::vector<SymSize> shape = lowering.tensor(base).shape;
  const std::vector<SymSize> mask_shape = lowering.tensor(*mask).shape;
  if (position + mask_shape.size() > shape.size() ||
      !std::equal(mask_shape.begin(), mask_shape.end(), shape.begin() + position))
    throw Unsupported(origin + ": the mask's shape is not that of the dims it indexes");
  const int values = NodeArgs{node, origin}.tensor(lowering, 2, "values");
  const std::vector<SymSize> values_shape = lowering.tensor(values).shape;
  if (!std::all_of(values_shape.begin(), values_shape.end(),
                   [](const SymSize& size) { return size.is_one(); }))
    throw Unsupported(origin + form);
  const GraphArg* accumulate_arg = node.arg(3, "accumulate");
  const bool accumulate = accumulate_arg && accumulate_arg->as_bool().value_or(false);
  const bool integer_values = is_integer_dtype(lowering.tensor(values).dtype);
  const int mask_id = *mask;
  const std::size_t rank = mask_shape.size();
  return add_pointwise(
      lowering, shape, *lowering.graph.value(node.output()).dtype, origin,
      [=](Ctx& ctx, const Coords& coords) {
        const Coords mask_at(coords.begin() + static_cast<std::ptrdiff_t>(position),
                             coords.begin() + static_cast<std::ptrdiff_t>(position + rank));
        const Coords value_at(values_shape.size(), ilit(0));
        Json value = integer && !integer_values
                         ? op("int", {ctx.lowering.float_element(ctx, values, value_at)})
                         : value_element(ctx, values, value_at, integer);
        const Json kept = value_element(ctx, base, coords, integer);
        if (accumulate) value = op("add", {kept, value});
        return op("where", {ctx.lowering.element(ctx, mask_id, mask_at), value, kept});
      });
}

}  // namespace

bool lower_scatter(Lowering& lowering, const GraphNode& node) {
  const std::string_view name = node.base_name();
  if (name != "index_put" && name != "index_add" && name != "index_copy" && name != "scatter" &&
      name != "scatter_add") {
    return false;
  }
  const std::string origin = fmt::format("{} (op {})", node.op, node.id);
  const int base = NodeArgs{node, origin}.tensor(lowering, 0, "self");
  const std::vector<SymSize> shape = lowering.tensor(base).shape;
  const DType dtype = *lowering.graph.value(node.output()).dtype;
  const bool integer = is_integer_dtype(dtype);
  if (name == "index_put") {
    if (const int masked = masked_index_put(lowering, node, base, integer, origin); masked >= 0) {
      lowering.value_tensor[node.output()] = masked;
      return true;
    }
  }
  const ScatterSpec spec = name == "index_put"
                               ? index_put(lowering, node, shape, integer, origin)
                               : along_dim(lowering, node, name, shape, integer, origin);

  // The result starts as a copy of the base, in the output it is returned as or else a temp of
  // the result's dtype (eager's).
  const SymSize elements = product(shape);
  const std::vector<SymSize> strides = contiguous_strides(shape);
  std::string buffer = returned_output(lowering, node, dtype);
  if (buffer.empty()) buffer = lowering.new_temp(elements, dtype);
  lowering.store_anywhere(base, buffer, strides);

  Json domain = Json::array();
  Coords coords;
  for (std::size_t d = 0; d < spec.domain.size(); ++d) {
    domain.push_back(spec.domain[d].text());
    coords.push_back(idx(static_cast<int>(d)));
  }
  const int k = lowering.new_kernel(
      {{"kind", "scatter"}, {"domain", domain}, {"accumulate", spec.accumulate}}, "scatter");
  Ctx ctx{lowering, k, Json::object(), false};
  Json value;
  Coords destination;
  try {
    value = spec.value(ctx, coords);
    destination = spec.destination(ctx, coords);
  } catch (const NotHere&) {
    throw Unsupported(origin + ": its source or index cannot be computed by a scatter kernel");
  }
  for (const std::size_t d : spec.checked)
    destination[d] = checked_coord(destination[d], shape[d], elements);
  Json strides_json = Json::array();
  for (const auto& stride : strides) strides_json.push_back(stride.text());
  Kernel& kernel = lowering.kernels[static_cast<std::size_t>(k)];
  kernel.loads = std::move(ctx.loads);
  kernel.stores.push_back({{"buffer", buffer},
                           {"offset", "0"},
                           {"strides", strides_json},
                           {"coords", destination},
                           {"value", std::move(value)}});
  // No space: nothing else is stored by a scatter kernel, whose points are not the result's.

  Tensor tensor;
  tensor.kind = Tensor::Kind::Stored;
  tensor.shape = shape;
  tensor.dtype = dtype;
  tensor.origin = origin;
  tensor.stored = StoredAt{buffer, SymSize::constant(0), strides, k};
  lowering.value_tensor[node.output()] = lowering.add_tensor(std::move(tensor));
  return true;
}

}  // namespace kernelarc::lowering
