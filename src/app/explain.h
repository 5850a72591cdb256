// `kernelarc explain`'s account of a problem in words: the traced op graph compactly (one line
// per compute node, views folded into the operands that use them), a kernel plan kernel by kernel,
// and a recognition as JSON.
#pragma once

#include <string>
#include <vector>

#include "app/recognize.h"
#include "lower/op_graph.h"

namespace kernelarc {

/// "%4 = aten.mul.Tensor(%3, weight) -> float32[batch_size, 4096]" per compute node, then
/// "output = %9" per graph output. A view operand reads "x.view[batch_size, 1]".
std::vector<std::string> graph_lines(const OpGraph& graph);

/// "kernel 0: reduce over [4096] for each of [batch_size]; stages s0 = sum, s1 = max; stores
/// output (full)" per kernel, after a line naming the temps.
std::vector<std::string> plan_lines(const OrderedJson& plan);

/// {"source", "family", "op_params", "summary", "reason", "notes", "bytes", "flops"}.
OrderedJson recognition_json(const Recognition& r);

}  // namespace kernelarc
