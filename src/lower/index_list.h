// x[i0, i1, ...] with a list of optional integer index tensors, as aten.index reads it and
// aten.index_put writes it: the index tensors broadcast together to B; the indexing result
// holds B where the indexed dims were when they are adjacent, else first, and x's other dims in
// order.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "lower/lowering.h"

namespace kernelarc::lowering {

class IndexList {
 public:
  /// Reads the list argument of `origin` for a tensor of `x_shape`; Unsupported when it is no
  /// list of tensors and Nones with at least one tensor, or holds a boolean mask.
  IndexList(Lowering& lowering, const GraphArg* list, std::vector<SymSize> x_shape,
            const std::string& origin);

  /// The shape of x[indices].
  const std::vector<SymSize>& result_shape() const { return result_shape_; }
  /// Whether dim `d` of x is indexed by a tensor.
  bool indexed_dim(std::size_t d) const { return d < indices_.size() && indices_[d].has_value(); }
  /// x's coords of the element at `coords` of x[indices]. An indexed dim holds the index read
  /// there, a negative one counted from the end as torch does, and otherwise unchecked.
  Coords x_coords(Ctx& ctx, const Coords& coords) const;

 private:
  std::vector<SymSize> x_shape_;
  std::vector<std::optional<int>> indices_;  ///< per leading dim of x: the index tensor
  std::size_t broadcast_rank_ = 0;
  std::size_t first_ = 0;              ///< where B sits in the result
  std::vector<std::size_t> position_;  ///< per dim of x that is not indexed: its result dim
  std::vector<SymSize> result_shape_;
};

/// `index` wrapped as torch wraps a negative index into a dim of `size`.
Json wrap_negative_index(const Json& index, const SymSize& size);

}  // namespace kernelarc::lowering
