// The moe family: one mixture-of-experts layer's forward pass (routing, the experts' gated MLPs,
// the weighted combine). read_moe_problem() finds the tensors and reads the routing rule;
// generate_moe_header() writes ka_problem.h. See docs/TEMPLATES.md ("Family: moe").
#pragma once

#include <string>

#include "synth/family.h"

namespace kernelarc {

struct MoeTensor {
  const TensorSpec* spec = nullptr;  ///< nullptr when the problem has no such tensor
  int index = -1;                    ///< in the definition's inputs (or outputs)
  explicit operator bool() const { return spec != nullptr; }
};

enum class MoeActivation { Silu, Gelu, GeluTanh };

/// The experts' weights and their MLP, as the forward and backward families both read them.
struct MoeExperts {
  MoeTensor w13, w_gate, w_up, w_down;  ///< w13 (fused gate and up) or w_gate and w_up
  /// float8_e4m3fn weights only: each weight's float32 scales, one per 128x128 block,
  /// [E, out / 128, in / 128] (DeepSeek-V3's block quantization).
  MoeTensor s13, s_gate, s_up, s_down;
  int64_t experts = 0, inter = 0;
  MoeActivation activation = MoeActivation::Silu;
  bool up_first = false;  ///< a fused w13 holds the up rows first

  bool fused_gate_up() const { return static_cast<bool>(w13); }
  bool fp8() const { return static_cast<bool>(s_down); }
};

struct MoeProblem : MoeExperts {
  MoeTensor hidden, logits, router_weight, bias;
  /// float8_e4m3fn hidden states only: their float32 scales, one per token and 128 features,
  /// [T, H / 128] or (FlashInfer's layout) [H / 128, T].
  MoeTensor hidden_scale;
  bool hidden_scale_tokens_first = false;
  /// Scalar inputs: the global id of the first expert whose weights the call holds (expert
  /// parallelism: the router chooses among routed_experts, the weights hold `experts` of them),
  /// and the routing weights' factor when it is an input rather than op_params.
  MoeTensor local_offset, scaling;
  MoeTensor output;            ///< index into the outputs
  int64_t routed_experts = 0;  ///< the routing input's experts; `experts` without a local offset
  int64_t hidden_size = 0, top_k = 0;
  std::string tokens_axis;
  // The routing rule (op_params).
  bool sigmoid = false;
  bool renormalize = true;
  int64_t n_group = 1, topk_group = 1;
  bool group_score_max = false;
  double routed_scaling = 1.0;
};

/// "silu", "gelu" or "gelu_tanh", as op_params.activation names it.
const char* moe_activation_name(MoeActivation activation);

/// Whether input `t` holds the routing weights' factor (a scalar named routed_scaling...), which
/// op_params then must not give.
bool is_routed_scaling_input(const TensorSpec& t);

/// Throws TemplateMismatch naming the field when the problem is not a mixture-of-experts layer
/// as the family defines it.
MoeProblem read_moe_problem(const Definition& def);

/// The mlp family: a dense gated MLP, read as a layer of one expert that every token takes
/// (experts 1, top_k 1, no routing input). Throws TemplateMismatch naming the field otherwise.
MoeProblem read_mlp_problem(const Definition& def);

/// ka_problem.h for `problem` (ka_bind form: CUDA shared objects and CPU templates); a problem
/// without routing (read_mlp_problem) gets no routing members.
std::string generate_moe_header(const MoeProblem& problem, const Definition& def,
                                const KernelTemplate& kernel);

}  // namespace kernelarc
