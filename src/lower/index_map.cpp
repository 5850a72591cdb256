// Index maps of views: the element of a view at some coords is the element of the node result
// it views at coords computed from the shared storage position. Strides are monomials, so
// the common views (permute, expand, slice, select, unsqueeze, reshapes that split or merge
// dims) simplify to plain coords, products and sums; anything else keeps the exact
// floordiv/mod of the linear position.
#include "lower/lowering.h"

#include <fmt/format.h>

namespace kernelarc::lowering {
namespace {

struct Term {
  SymSize stride;
  SymSize size;
  Json coord;
};

}  // namespace

Coords view_to_base_coords(const Lowering& lowering, const std::vector<SymSize>& view_shape,
                           const std::vector<SymSize>& view_strides, const SymSize& view_offset,
                           const std::vector<SymSize>& base_shape,
                           const std::vector<SymSize>& base_strides, const Coords& coords) {
  std::vector<Term> terms;
  for (std::size_t j = 0; j < view_shape.size(); ++j) {
    if (view_shape[j].is_one() || view_strides[j].is_zero()) continue;
    terms.push_back({view_strides[j], view_shape[j], coords[j]});
  }
  // True when `bound(axes)` < `limit` at every traced axis set.
  const auto below = [&](const auto& bound, const SymSize& limit) {
    for (const auto& axes : lowering.traced_axes) {
      if (bound(axes) >= limit.evaluate(axes)) return false;
    }
    return true;
  };
  Coords result(base_shape.size());
  for (std::size_t d = 0; d < base_shape.size(); ++d) {
    const SymSize& n = base_shape[d];
    const SymSize& s = base_strides[d];
    if (n.is_one()) {
      result[d] = ilit(0);
      continue;
    }
    const SymSize period = s * n;
    Json high = ilit(0);
    std::vector<std::pair<SymSize, SymSize>> high_terms;  // (quotient, size)
    std::vector<Term> low_terms;
    for (const auto& term : terms) {
      const auto quotient = term.stride.divided_by(s);
      if (!quotient) {
        low_terms.push_back(term);
        continue;
      }
      if (term.stride.divided_by(period)) continue;  // whole periods vanish modulo n
      high = iadd(high, imul(size_expr(*quotient), term.coord));
      high_terms.emplace_back(*quotient, term.size);
    }
    // Lower terms that together stay below one step of this dim never carry into it.
    const auto low_bound = [&](const AxisValues& axes) {
      int64_t bound = 0;
      for (const auto& term : low_terms) {
        bound += term.stride.evaluate(axes) * (term.size.evaluate(axes) - 1);
      }
      return bound;
    };
    bool has_low = !low_terms.empty() && !below(low_bound, s);
    if (const auto quotient = view_offset.divided_by(s)) {
      if (!view_offset.divided_by(period)) {
        high = iadd(high, size_expr(*quotient));
        high_terms.emplace_back(*quotient, SymSize::constant(2));
      }
    } else if (!view_offset.is_zero()) {
      has_low = true;
    }
    if (!has_low) {
      const auto high_bound = [&](const AxisValues& axes) {
        int64_t bound = 0;
        for (const auto& [quotient, size] : high_terms) {
          bound += quotient.evaluate(axes) * (size.evaluate(axes) - 1);
        }
        return bound;
      };
      result[d] = below(high_bound, n) ? high : op("mod", {high, size_expr(n)});
      continue;
    }
    // The lower terms may carry into this dim: use the exact linear position.
    Json position = size_expr(view_offset);
    for (const auto& term : terms) {
      position = iadd(position, imul(size_expr(term.stride), term.coord));
    }
    const auto quotient_bound = [&](const AxisValues& axes) {
      int64_t bound = view_offset.evaluate(axes);
      for (const auto& term : terms) {
        bound += term.stride.evaluate(axes) * (term.size.evaluate(axes) - 1);
      }
      return bound / s.evaluate(axes);
    };
    Json quotient = s.is_one() ? position : op("floordiv", {position, size_expr(s)});
    result[d] = below(quotient_bound, n) ? quotient : op("mod", {quotient, size_expr(n)});
  }
  return result;
}

}  // namespace kernelarc::lowering
