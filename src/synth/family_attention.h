// The attention family: scaled dot-product attention with grouped query heads over dense,
// ragged and paged key/value layouts. read_attention_problem() finds the tensors and the layout;
// generate_attention_header() writes ka_problem.h, whose row accessors hide the layout from the
// templates. See docs/TEMPLATES.md ("Family: attention").
#pragma once

#include <optional>
#include <string>

#include "synth/family.h"

namespace kernelarc {

enum class AttentionLayout { Bhsd, Bshd, Ragged, Paged };

struct AttentionTensor {
  const TensorSpec* spec = nullptr;  ///< nullptr when the problem has no such tensor
  int index = -1;                    ///< in the definition's inputs (or outputs)
  explicit operator bool() const { return spec != nullptr; }
};

struct AttentionProblem {
  AttentionLayout layout = AttentionLayout::Bhsd;
  bool decode = false;  ///< q has no sequence axis: one query per sequence
  bool causal = false;
  bool lse_base2 = true;
  /// K and V are NVFP4: float4 codes (a row of head_dim / 2 bytes) with k_scale / v_scale, one
  /// float8_e4m3fn per 16 values of a row (a row of head_dim / 16 scales).
  bool kv_fp4 = false;
  AttentionTensor q, k, v, qo_indptr, kv_indptr, kv_indices, last_page_len, scale;
  AttentionTensor k_scale, v_scale;  ///< the NVFP4 block scales; absent otherwise
  AttentionTensor output, lse;       ///< indices into the outputs
  double scale_value = 0;            ///< used when there is no scale input
  int64_t head_dim = 0, q_heads = 0, kv_heads = 0, page_size = 1;
  // Axis names (empty where the layout has none).
  std::string batch_axis;    ///< dense layouts and paged decode: q's first axis
  std::string q_seq_axis;    ///< dense prefill
  std::string kv_seq_axis;   ///< dense
  std::string total_q_axis;  ///< ragged and paged prefill: q's first axis
  std::string indptr_axis;   ///< ragged and paged: the length of kv_indptr (batch + 1)
  std::string kv_rows_axis;  ///< ragged: k's first axis; paged: kv_indices' length

  bool dense() const { return layout == AttentionLayout::Bhsd || layout == AttentionLayout::Bshd; }
  /// Sequences' query counts differ (ragged and paged prefill).
  bool ragged_q() const { return !dense() && !decode; }
};

/// "bhsd", "bshd", "ragged" or "paged", as op_params.layout names it.
const char* attention_layout_name(AttentionLayout layout);

/// Throws TemplateMismatch naming the field when the problem is not attention as the family
/// defines it.
AttentionProblem read_attention_problem(const Definition& def);

/// ka_problem.h for `problem` in the form `kernel` needs (nvrtc kernel parameters, or ka_bind).
std::string generate_attention_header(const AttentionProblem& problem, const Definition& def,
                                      const KernelTemplate& kernel);

}  // namespace kernelarc
