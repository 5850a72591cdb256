// Attention recognised by its tensors rather than by tracing. FlashInfer-Bench's and
// SOL-ExecBench's attention references loop over sequences and heads with data-dependent indexing
// (kv_indptr[b].item()), which the tracer cannot follow, yet their tensors (q, k_cache, v_cache,
// kv_indptr, kv_indices, sm_scale, output, lse) say exactly what the attention family needs.
#pragma once

#include <optional>
#include <string>

#include "app/family_signature.h"
#include "core/problem.h"

namespace kernelarc {

/// The attention family for a definition whose op_type or name says attention (attention, attn,
/// gqa, mha, mqa, sdpa) and whose tensors the attention binder accepts; nullopt otherwise.
/// What the tensors do not show is read from the text: causal when the name or description says
/// "causal" (and not "non-causal"); the lse's base from its description ("2-based", "base 2",
/// "log2", or "natural"), else 2, FlashInfer's convention. The guard checks the guess against the
/// reference, so a wrong one fails candidates and serves nothing wrong.
std::optional<FamilySignature> match_attention_signature(const Definition& def);

}  // namespace kernelarc
