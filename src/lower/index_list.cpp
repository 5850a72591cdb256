#include "lower/index_list.h"

#include <algorithm>

#include <fmt/format.h>

namespace kernelarc::lowering {

IndexList::IndexList(Lowering& lowering, const GraphArg* list, std::vector<SymSize> x_shape,
                     const std::string& origin)
    : x_shape_(std::move(x_shape)) {
  if (!list || list->kind != GraphArg::Kind::List || list->items.empty())
    throw Unsupported(origin + ": expected a list of index tensors");
  std::vector<std::vector<SymSize>> shapes;
  for (const GraphArg& item : list->items) {
    if (item.is_none()) {
      indices_.emplace_back();
      continue;
    }
    const auto value = item.as_value();
    if (!value) throw Unsupported(origin + ": an index must be a tensor or None");
    const int id = lowering.tensor_of(*value, origin);
    const DType dtype = lowering.tensor(id).dtype;
    if (!is_integer_dtype(dtype) || dtype == DType::Bool)
      throw Unsupported(origin +
                        ": a boolean mask index makes a data-dependent shape; only integer "
                        "index tensors are lowered");
    shapes.push_back(lowering.tensor(id).shape);
    broadcast_rank_ = std::max(broadcast_rank_, shapes.back().size());
    indices_.push_back(id);
  }
  std::vector<std::size_t> indexed;
  for (std::size_t d = 0; d < indices_.size(); ++d)
    if (indices_[d]) indexed.push_back(d);
  if (indexed.empty()) throw Unsupported(origin + ": no index tensor");
  if (indices_.size() > x_shape_.size())
    throw Unsupported(fmt::format("{}: {} indices for a tensor of rank {}", origin, indices_.size(),
                                  x_shape_.size()));
  // B: numpy broadcasting of the index shapes, aligned at their last dims.
  std::vector<SymSize> broadcast(broadcast_rank_, SymSize::constant(1));
  for (const auto& shape : shapes) {
    const std::size_t skip = broadcast_rank_ - shape.size();
    for (std::size_t i = 0; i < shape.size(); ++i)
      if (!shape[i].is_one()) broadcast[skip + i] = shape[i];
  }
  const bool adjacent = indexed.back() - indexed.front() + 1 == indexed.size();
  first_ = adjacent ? indexed.front() : 0;
  position_.assign(x_shape_.size(), 0);
  std::vector<SymSize> kept_before, kept_after;
  for (std::size_t d = 0; d < x_shape_.size(); ++d) {
    if (indexed_dim(d)) continue;
    const bool before = adjacent && d < first_;
    position_[d] =
        before ? kept_before.size() : kept_before.size() + broadcast_rank_ + kept_after.size();
    (before ? kept_before : kept_after).push_back(x_shape_[d]);
  }
  result_shape_ = kept_before;
  result_shape_.insert(result_shape_.end(), broadcast.begin(), broadcast.end());
  result_shape_.insert(result_shape_.end(), kept_after.begin(), kept_after.end());
}

Coords IndexList::x_coords(Ctx& ctx, const Coords& coords) const {
  const Coords b(coords.begin() + static_cast<std::ptrdiff_t>(first_),
                 coords.begin() + static_cast<std::ptrdiff_t>(first_ + broadcast_rank_));
  Coords inner(x_shape_.size());
  for (std::size_t d = 0; d < x_shape_.size(); ++d) {
    if (!indexed_dim(d)) {
      inner[d] = coords[position_[d]];
      continue;
    }
    const int id = *indices_[d];
    const Json selected =
        ctx.lowering.element(ctx, id, broadcast_coords(ctx.lowering.tensor(id).shape, b));
    inner[d] = wrap_negative_index(selected, x_shape_[d]);
  }
  return inner;
}

Json wrap_negative_index(const Json& index, const SymSize& size) {
  return op("where", {op("lt", {index, ilit(0)}), op("add", {index, size_expr(size)}), index});
}

}  // namespace kernelarc::lowering
