// Reshape sinking for element-wise nodes (pointwise_node.h, compute_in_product_shape). A linear
// layer on [B, S, K] activations traces as a [B*S, N] product viewed as [B, S, N]; an epilogue
// computed over [B, S, N] reaches the product only through floordiv/mod coords, which the
// product's kernel cannot match to its own point, so the epilogue became a second kernel over
// a temporary. Computed over [B*S, N] instead, it is the product's epilogue (and a residual
// becomes cuBLASLt's C matrix on the library route).
#include "lower/pointwise_node.h"

namespace kernelarc::lowering {
namespace {

/// True when an operand of `shape` broadcast against `node_shape` reads the same elements as
/// against `product_shape`, a row-major reshape of it: it spans only trailing dims that the two
/// shapes share (a row-major reshape keeps the coords of an equal trailing block).
bool broadcasts_alike(const std::vector<SymSize>& shape, const std::vector<SymSize>& node_shape,
                      const std::vector<SymSize>& product_shape) {
  // broadcast_coords aligns ranks on the right: the operand cannot have more dims.
  if (shape.size() > product_shape.size()) return false;
  std::size_t span = shape.size();
  while (span > 0 && shape[shape.size() - span].is_one()) --span;
  if (span > node_shape.size() || span > product_shape.size()) return false;
  for (std::size_t d = 1; d <= span; ++d) {
    const SymSize& size = node_shape[node_shape.size() - d];
    if (!(product_shape[product_shape.size() - d] == size)) return false;
    const SymSize& own = shape[shape.size() - d];
    if (!own.is_one() && !(own == size)) return false;
  }
  return true;
}

}  // namespace

bool PointwiseNode::compute_in_product_shape() {
  std::vector<int> operands;
  for (const GraphArg& arg : node_.args) {
    if (const auto value = arg.as_value()) operands.push_back(lowering_.tensor_of(*value, origin_));
  }
  for (const auto& [name, arg] : node_.kwargs) {
    if (const auto value = arg.as_value()) operands.push_back(lowering_.tensor_of(*value, origin_));
  }
  std::optional<std::vector<SymSize>> product_shape;
  for (const int id : operands) {
    const Tensor& t = lowering_.tensor(id);
    const int base = reshaped_base(lowering_, id);
    if (t.shape != shape_ || base < 0) continue;
    const Tensor& product = lowering_.tensor(base);
    if ((product.kind == Tensor::Kind::Matmul || product.in_product_shape) &&
        product.shape != shape_) {
      product_shape = product.shape;
      break;
    }
  }
  if (!product_shape || !(product(*product_shape) == product(shape_))) return false;

  std::map<int, int> equivalent;
  for (const int id : operands) {
    const Tensor& t = lowering_.tensor(id);
    if (t.shape != shape_) {
      if (broadcasts_alike(t.shape, shape_, *product_shape)) continue;
      return false;
    }
    const int base = reshaped_base(lowering_, id);
    if (base >= 0 && lowering_.tensor(base).shape == *product_shape) {
      equivalent[id] = base;
      continue;
    }
    if (t.kind != Tensor::Kind::Stored || !t.stored || !t.stored->offset.is_zero() ||
        !is_contiguous(t.stored->strides, t.shape)) {
      return false;
    }
    // The same storage read as the product's shape.
    Tensor alias;
    alias.kind = Tensor::Kind::Stored;
    alias.shape = *product_shape;
    alias.dtype = t.dtype;
    alias.origin = t.origin;
    alias.stored = StoredAt{t.stored->buffer, t.stored->offset, contiguous_strides(*product_shape),
                            t.stored->kernel};
    equivalent[id] = lowering_.add_tensor(std::move(alias));
  }
  result_shape_ = shape_;
  shape_ = *product_shape;
  in_product_shape_ = std::move(equivalent);
  return true;
}

int PointwiseNode::reshape_view_of(int computed) {
  lowering_.tensor(computed).layout_strides = contiguous_strides(shape_);
  lowering_.tensor(computed).in_product_shape = true;
  const auto view_shape = *result_shape_;
  const auto base_shape = shape_;
  const int id =
      add_pointwise(lowering_, view_shape, dtype_, origin_ + " (computed over the product's shape)",
                    [=](Ctx& ctx, const Coords& coords) {
                      return ctx.lowering.element(
                          ctx, computed,
                          view_to_base_coords(ctx.lowering, view_shape,
                                              contiguous_strides(view_shape), SymSize::constant(0),
                                              base_shape, contiguous_strides(base_shape), coords));
                    });
  Tensor& view = lowering_.tensor(id);
  view.view_base = computed;
  view.view_offset = SymSize::constant(0);
  view.view_strides = contiguous_strides(view_shape);
  return id;
}

}  // namespace kernelarc::lowering
