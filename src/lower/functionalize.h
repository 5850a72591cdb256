// Rewrites the in-place copies of a traced graph as pure copies where that changes nothing.
//
// torch._decomp turns every in-place op of a reference (`relu_`, `x += y`, `nn.ReLU(inplace=True)`)
// into its functional form followed by `copy_(target, result)`. The graph records that write as
// a new value on the target's buffer. Where nothing reads the target's earlier values after the
// write (no view of it made before the write is used afterwards; one with the written value's
// own layout, the tensor written through a full slice of it, is read as the written value), the
// write is the same as a fresh tensor holding the copied values: the node becomes
// `aten.copy.default` and the values it and its later views make move to a buffer of their own.
// Only writes of a whole tensor (not a slice of one) are rewritten. The in-place scatters
// (`index_put_`, `index_add_`, `index_copy_`, `scatter_`, `scatter_add_`) are rewritten the same
// way into their functional forms, so a reference that updates one of its inputs in place reads
// as one that returns an updated copy (plans never write inputs). Family matchers and the
// lowering then see a pure graph. A write whose stale views are read later stays in place, and
// the lowering says so. An `as_strided_` that restrides only size-1 dims (an adaptive pool's
// decomposition leaves one) moves no element and becomes an alias.
#pragma once

#include <string_view>

#include "lower/op_graph.h"

namespace kernelarc {

/// In-place ops (by base name) that write a tensor given as their first argument and that the
/// lowering serves in their functional form: `copy_` (what torch._decomp leaves of every in-place
/// op) and the scatters (`x.index_add_(...)`, `x[idx] += v`).
bool is_whole_tensor_write(std::string_view name);

/// Rewrites every no-op `as_strided_` as an alias, and every in-place `copy_` or scatter of
/// `graph` that can be read as a pure op.
void functionalize_in_place_writes(OpGraph& graph);

}  // namespace kernelarc
