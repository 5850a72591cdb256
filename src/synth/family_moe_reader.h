// What the moe and moe_backward binders share: the experts' weights (fused gate and up, or apart,
// and the down projection) found by shape, the checks and op_params readers their messages
// share, and the pieces of their headers that describe the weights. Internal to the two binders.
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

#include "synth/family_moe.h"

namespace kernelarc {

class MoeReaderBase {
 protected:
  /// `dense`: one MLP whose weights are [out, in] (the mlp family), not [E, out, in].
  MoeReaderBase(const Definition& def, MoeExperts& experts, bool dense = false);

  const std::vector<std::string>& shape(const MoeTensor& t) const { return *t.spec->shape; }
  std::string field(const MoeTensor& t, const char* kind = "inputs") const;
  int64_t static_value(const MoeTensor& t, std::size_t dim, const char* what) const;
  void require_float(const MoeTensor& t, const char* kind = "inputs") const;
  /// require_float, or float8_e4m3fn where the family serves it (fp8_allowed_).
  void require_float_or_fp8(const MoeTensor& t) const;
  bool boolean(const OrderedJson& value, const std::string& field) const;
  int64_t positive_int(const OrderedJson& value, const std::string& field) const;
  std::string choice(const OrderedJson& value, const std::string& field,
                     std::initializer_list<const char*> allowed) const;

  /// The rank-3 inputs are the experts' weights, [E, out, in], sharing E and a float dtype
  /// (dense: the rank-2 inputs other than dense_hidden_, [out, in]).
  void find_expert_weights();
  /// Down projects I to H ([E, H, I]); gate and up project H to I. Shapes decide, and names
  /// where shapes cannot (I == H). Needs hidden_axis_.
  void assign_expert_weights();
  /// Whether input `t` is one of the weights find_expert_weights() collects.
  bool is_weight(const TensorSpec& t) const;
  /// Whether input `t` is another input's block scales: named after it with _scale, _scales,
  /// _scale_inv (DeepSeek-V3's checkpoints) or _sf.
  bool is_scale(const TensorSpec& t) const;
  /// The input holding `t`'s block scales, or none.
  MoeTensor scale_of(const MoeTensor& t) const;
  /// float8_e4m3fn weights (fp8_allowed_ only): each weight's [E, out / 128, in / 128] float32
  /// scales, found by name. Needs assign_expert_weights().
  void read_weight_scales();
  /// "[E, out, in]" or, dense, "[out, in]".
  std::string weight_shape(const std::string& out, const std::string& in) const;
  /// The one output, of `hidden`'s shape and dtype (float8 hidden states: of a 16- or 32-bit
  /// float dtype).
  MoeTensor read_output(const MoeTensor& hidden) const;
  /// activation or gate_up_order; false for another key.
  bool read_weight_param(const std::string& key, const OrderedJson& value);
  /// gate_up_order names a fused weight's halves only.
  void check_weight_params() const;

  const Definition& def_;
  const AxisValues known_;
  std::vector<MoeTensor> weights_;
  std::string experts_axis_, hidden_axis_;
  MoeExperts& mlp_;  ///< the weights of the problem being read
  const int lead_;   ///< dimensions ahead of a weight's [out, in]: 1 (experts) or 0 (dense)
  bool fp8_allowed_ = false;  ///< the family serves float8_e4m3fn weights with block scales
  const TensorSpec* dense_hidden_ = nullptr;  ///< dense: the hidden states, the one rank-2
                                              ///< input that is not a weight
};

/// The first row of expert e's gate (or, `up`, up) block in a header's KaArgs, whose members
/// `gate_member` (the fused w13, or the gate) and `up_member` hold the weights.
std::string moe_gate_up_rows(const MoeExperts& weights, bool up, const char* gate_member,
                             const char* up_member);

/// The start of either family's ka_problem.h: what wrote it, and the target's prelude.
std::string moe_header_start(const char* binder, const Definition& def,
                             const KernelTemplate& kernel);

/// The edge of a float8 block scale's block.
constexpr int64_t kMoeScaleBlock = 128;

/// A ka_bind line refusing `data` (named `name`) unless 16-byte aligned: the CUDA templates copy
/// rows in 16-byte units.
std::string moe_aligned_check(const std::string& data, const std::string& name);

/// Throws TemplateMismatch unless `kernel` serves the definition's family as a shared object.
void require_moe_template(const Definition& def, const KernelTemplate& kernel);

/// The binding both families give: the header, TOKENS, and the sizes as constants (EXPERTS and
/// LOCAL_EXPERTS both the weights' experts).
FamilyBinding moe_binding(std::string header, const std::string& tokens_axis,
                          const MoeExperts& weights, int64_t hidden_size, int64_t top_k,
                          DType hidden_dtype);

/// ka_moe_activation(g) and ka_moe_activation_grad(g) for a header.
std::string moe_activation_functions(MoeActivation activation);

}  // namespace kernelarc
