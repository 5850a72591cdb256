// Lowering an op graph (docs/RECOGNITION.md §1) to a fused kernel plan (§2).
//
// Inductor-like, simplified: every graph value is a strided view of a buffer, every compute node
// an expression of the element it produces. Element-wise work is inlined (recomputed) into
// whatever consumes it: pointwise stores, reduction stages, matmul epilogues, scanned values.
// Reductions over the same domain share one reduce kernel, whose "full" stores write results
// broadcast back over the reduced dims (softmax, norms). What cannot be fused is stored to a
// temp by an earlier kernel.
#pragma once

#include <string>
#include <vector>

#include "core/json_fields.h"
#include "core/problem.h"
#include "lower/op_graph.h"

namespace kernelarc {

struct PlanLowering {
  bool ok = false;
  OrderedJson plan;                ///< the kernel plan (when ok)
  std::string reason;              ///< why not (when !ok), naming the op and what would be needed
  std::vector<std::string> notes;  ///< decisions worth showing in `kernelarc explain`
};

/// `simplify_indices`: run simplify_plan (simplify_plan.h) over the plan; off only to compare a
/// plan with its simplification.
PlanLowering lower_to_plan(const OpGraph& graph, const Definition& definition,
                           bool simplify_indices = true);

}  // namespace kernelarc
