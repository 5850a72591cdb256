// Mixture-of-experts layers recognised by their tensors rather than by tracing. Their references
// route with torch.topk and loop over experts with data-dependent token selection, which the
// tracer cannot follow, yet the tensors (hidden states, logits or a router weight, rank-3 expert
// weights) and the reference's text say what the moe family needs.
#pragma once

#include <optional>

#include "app/family_signature.h"
#include "core/problem.h"

namespace kernelarc {

/// The moe family for a definition whose op_type or name says so (moe, expert, mixture) and
/// whose tensors the moe binder accepts; nullopt otherwise. The routing rule is read from the
/// definition: top_k from a const axis named like it (top_k, topk, num_experts_per_tok), else
/// from the reference (`top_k = 8`, `.topk(scores, 2`), else from the name ("top2"); sigmoid
/// scoring when the reference calls sigmoid; renormalized when it divides the chosen weights by
/// their sum (or sets norm_topk_prob / renormalize); n_group, topk_group and
/// routed_scaling_factor from assignments in the reference; the activation from its calls. The
/// guard checks the guess against the reference, so a wrong one fails candidates and serves
/// nothing wrong.
std::optional<FamilySignature> match_moe_signature(const Definition& def);

}  // namespace kernelarc
