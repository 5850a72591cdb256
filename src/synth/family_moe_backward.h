// The moe_backward family: the backward pass of a mixture-of-experts layer's experts, given the
// routing the forward pass chose (the experts' ids and weights per token). It yields the
// gradients of the hidden states, of every expert weight, and optionally of the routing weights
// (from which the router's own gradient follows). read_moe_backward_problem() finds the tensors;
// generate_moe_backward_header() writes ka_problem.h. See docs/TEMPLATES.md ("Family:
// moe_backward").
#pragma once

#include <string>

#include "synth/family_moe.h"

namespace kernelarc {

struct MoeBackwardProblem : MoeExperts {
  // Inputs.
  MoeTensor hidden, grad_output, topk_ids, topk_weights;
  // Outputs (indices into the outputs): the gradients of the hidden states and of the weights
  // (grad_w13, or grad_gate and grad_up; grad_down), and of the routing weights when asked for.
  MoeTensor grad_hidden, grad_w13, grad_gate, grad_up, grad_down, grad_topk_weights;
  int64_t hidden_size = 0, top_k = 0;
  std::string tokens_axis;
};

/// Throws TemplateMismatch naming the field when the problem is not an experts' backward pass
/// as the family defines it.
MoeBackwardProblem read_moe_backward_problem(const Definition& def);

/// ka_problem.h for `problem` (ka_bind form).
std::string generate_moe_backward_header(const MoeBackwardProblem& problem, const Definition& def,
                                         const KernelTemplate& kernel);

}  // namespace kernelarc
