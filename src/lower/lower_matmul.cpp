// Matrix products become matmul kernels. An operand that is a stored view (an input with any
// transpose or broadcast of the batch, a stored result) or a widening cast of one is read
// directly with its strides; one that needs computing is first stored by a pointwise kernel.
// The accumulator's consumers over the same (batch, m, n) space become the kernel's epilogue.
#include <fmt/format.h>

#include "lower/lowering.h"

namespace kernelarc::lowering {
namespace {

/// A LOAD of `view` with one coord per dim (broadcast dims dropped).
Json operand_load(const StoredAt& view, const Coords& coords) {
  Json strides = Json::array(), coords_json = Json::array();
  for (std::size_t d = 0; d < view.strides.size(); ++d) {
    if (view.strides[d].is_zero()) continue;
    strides.push_back(view.strides[d].text());
    coords_json.push_back(coords[d]);
  }
  return {{"buffer", view.buffer},
          {"offset", view.offset.text()},
          {"strides", strides},
          {"coords", coords_json}};
}

int value_arg(Lowering& lowering, const GraphNode& node, std::size_t position,
              const std::string& origin) {
  const auto value = node.arg(position) ? node.arg(position)->as_value() : std::nullopt;
  if (!value) throw Unsupported(fmt::format("{}: argument {} must be a tensor", origin, position));
  return lowering.tensor_of(*value, origin);
}

}  // namespace

StoredAt stored_view(Lowering& lowering, int id) {
  for (;;) {
    const Tensor& t = lowering.tensor(id);
    const int next_kernel = static_cast<int>(lowering.kernels.size());
    if (t.stored && t.stored->kernel < next_kernel) return *t.stored;
    if (t.view_base >= 0) {
      const Tensor& base = lowering.tensor(t.view_base);
      if (base.stored && base.stored->offset.is_zero() &&
          base.stored->strides == base.layout_strides) {
        return {base.stored->buffer, t.view_offset, t.view_strides, base.stored->kernel};
      }
    }
    if (t.same_values_as < 0) break;
    id = t.same_values_as;
  }
  return lowering.materialize_now(id, StoredFor::Operand);
}

bool lower_matmul(Lowering& lowering, const GraphNode& node) {
  const std::string_view name = node.base_name();
  const bool with_bias = name == "addmm" || name == "baddbmm" || name == "addmv";
  if (!(name == "mm" || name == "bmm" || name == "mv" || name == "dot" || name == "outer" ||
        with_bias)) {
    return false;
  }
  const std::string origin = fmt::format("{} (op {})", node.op, node.id);
  const std::size_t first = with_bias ? 1 : 0;
  const int a = value_arg(lowering, node, first, origin);
  const int b = value_arg(lowering, node, first + 1, origin);
  const auto a_shape = lowering.tensor(a).shape;
  const auto b_shape = lowering.tensor(b).shape;
  const bool batched = name == "bmm" || name == "baddbmm";
  const std::size_t batch_rank = batched ? 1 : 0;
  const int B = static_cast<int>(batch_rank);
  const Json m_idx = idx(B), n_idx = idx(B + 1), k_idx = idx(B + 2);

  std::vector<SymSize> batch;
  SymSize m = SymSize::constant(1), n = SymSize::constant(1), k = SymSize::constant(1);
  Coords a_coords, b_coords;
  if (name == "dot") {
    k = a_shape[0];
    a_coords = {k_idx};
    b_coords = {k_idx};
  } else if (name == "outer") {
    m = a_shape[0];
    n = b_shape[0];
    a_coords = {m_idx};
    b_coords = {n_idx};
  } else if (name == "mv" || name == "addmv") {
    m = a_shape[0];
    k = a_shape[1];
    a_coords = {m_idx, k_idx};
    b_coords = {k_idx};
  } else {
    if (batched) batch.push_back(a_shape[0]);
    m = a_shape[batch_rank];
    k = a_shape[batch_rank + 1];
    n = b_shape[batch_rank + 1];
    if (batched) {
      a_coords.push_back(a_shape[0].is_one() ? ilit(0) : idx(0));
      b_coords.push_back(b_shape[0].is_one() ? ilit(0) : idx(0));
    }
    a_coords.insert(a_coords.end(), {m_idx, k_idx});
    b_coords.insert(b_coords.end(), {k_idx, n_idx});
  }
  const StoredAt a_view = stored_view(lowering, a);
  const StoredAt b_view = stored_view(lowering, b);

  Json batch_json = Json::array();
  for (const auto& size : batch) batch_json.push_back(size.text());
  const int kernel = lowering.new_kernel({{"kind", "matmul"},
                                          {"batch", batch_json},
                                          {"m", m.text()},
                                          {"n", n.text()},
                                          {"k", k.text()},
                                          {"a", operand_load(a_view, a_coords)},
                                          {"b", operand_load(b_view, b_coords)}},
                                         "matmul");
  std::vector<SymSize> space = batch;
  space.push_back(m);
  space.push_back(n);
  Coords space_coords;
  for (int d = 0; d < B + 2; ++d) space_coords.push_back(idx(d));
  lowering.kernels[static_cast<std::size_t>(kernel)].spaces.push_back({"", space, space_coords});

  const DType out_dtype = *lowering.graph.value(node.output()).dtype;
  Tensor product_tensor;
  product_tensor.kind = Tensor::Kind::Matmul;
  product_tensor.shape = space;
  // With a bias PyTorch adds it to the accumulator and rounds once: the product alone is not
  // rounded to the node's dtype (a stored product keeps the compute precision).
  product_tensor.dtype = with_bias ? lowering.compute_dtype : out_dtype;
  product_tensor.origin = origin;
  product_tensor.kernel = kernel;
  product_tensor.ref = Json::array({"acc"});
  product_tensor.at = space_coords;
  const int product = lowering.add_tensor(std::move(product_tensor));

  // The node's result in its own shape: [batch..., m, n], [m] for mv, [] for dot.
  const auto out_shape = lowering.graph.value(node.output()).shape;
  int result = product;
  if (name == "mv" || name == "addmv" || name == "dot") {
    const bool vector = name != "dot";
    result = add_pointwise(
        lowering, out_shape, out_dtype, origin, [product, vector](Ctx& ctx, const Coords& c) {
          return ctx.lowering.element(ctx, product, {vector ? c[0] : ilit(0), ilit(0)});
        });
  }
  if (with_bias) {
    const int bias = value_arg(lowering, node, 0, origin);
    const auto bias_shape = lowering.tensor(bias).shape;
    const auto number = [&](std::string_view key) {
      const GraphArg* arg = node.kwarg(key);
      return arg && arg->as_float() ? *arg->as_float() : 1.0;
    };
    const double beta = number("beta"), alpha = number("alpha");
    const int scaled = result;
    result = add_pointwise(lowering, out_shape, out_dtype, origin, [=](Ctx& ctx, const Coords& c) {
      Json acc = ctx.lowering.element(ctx, scaled, c);
      Json bias_value = ctx.lowering.float_element(ctx, bias, broadcast_coords(bias_shape, c));
      if (alpha != 1.0) acc = op("mul", {flit(alpha), acc});
      if (beta == 0.0) return acc;
      if (beta != 1.0) bias_value = op("mul", {flit(beta), bias_value});
      return op("add", {bias_value, acc});
    });
  }
  lowering.value_tensor[node.output()] = result;
  return true;
}

}  // namespace kernelarc::lowering
