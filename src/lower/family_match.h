// Recognition, arrow (a) of docs/RECOGNITION.md: a traced op graph matched onto one of the
// hand-written, tuned template families (rmsnorm, layernorm, softmax, logsumexp, reduce,
// elementwise, gemm) with the op_params its binder reads (docs/TEMPLATES.md).
//
// A match is exact in meaning: the family's kernel computes what the graph computes, up to the
// family's float32 arithmetic where the reference rounds an intermediate. Anything the family's
// op_params cannot say (a residual added after a norm, eps given as a scalar input, a reduction
// over another axis, an output the family does not write) is not a match, and `reason` says
// why; the generic fused lowering serves such a graph instead.
#pragma once

#include <string>

#include "core/problem.h"
#include "lower/op_graph.h"

namespace kernelarc {

struct FamilyMatch {
  bool ok = false;
  std::string family;     ///< the op_family, when ok
  OrderedJson op_params;  ///< its kernelarc.op_params, when ok
  std::string summary;    ///< one line: what was recognised ("rmsnorm of hidden_states ...")
  std::string reason;     ///< when not ok: why no family serves the graph
};

/// The family serving `graph`, the trace of `definition`'s reference, or why none does.
FamilyMatch match_family(const OpGraph& graph, const Definition& definition);

}  // namespace kernelarc
