// The cost expressions a speed-of-light bound needs (kernelarc.bytes and kernelarc.flops),
// derived for a recognized problem whose definition does not give them.
#pragma once

#include <string>

#include "core/problem.h"
#include "lower/op_graph.h"

namespace kernelarc {

/// Bytes every kernel must move at least: each tensor input the reference reads and each
/// output, once, as an expression over the axis names ("batch_size*4096*2 + batch_size*4096*2").
/// An input the reference never reads is left out; scalars travel as arguments, not memory.
std::string io_bytes_expr(const Definition& def, const OpGraph& graph);

/// 2*batch*m*n*k summed over the plan's matmul kernels; empty when it has none.
std::string plan_flops_expr(const OrderedJson& plan);

}  // namespace kernelarc
