#include "app/recognize_attention.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/dtype.h"
#include "core/text.h"
#include "synth/family_attention.h"

namespace kernelarc {

namespace {

bool says_causal(const Definition& def) {
  const std::string text = to_lower(def.name + " " + def.description);
  if (mentions(text, {"non-causal", "noncausal", "non_causal", "not causal"})) return false;
  return mentions(text, {"causal"});
}

/// 2 or "e": what the lse output's description says, else FlashInfer's base 2.
OrderedJson lse_base(const Definition& def) {
  for (const TensorSpec& output : def.outputs) {
    if (output.name != "lse") continue;
    const std::string text = to_lower(output.description);
    if (mentions(text, {"natural", "base e", "base-e", "ln("})) return "e";
  }
  return 2;
}

/// "a * b * c" over a shape's axes, times `factor`.
std::string elements(const TensorSpec& t, const std::string& factor) {
  std::vector<std::string> terms = t.shape ? *t.shape : std::vector<std::string>{};
  terms.push_back(factor);
  return fmt::format("{}", fmt::join(terms, " * "));
}

std::string bytes_expr(const AttentionProblem& p) {
  const std::string elem = std::to_string(dtype_size(p.q.spec->dtype));
  std::vector<std::string> terms = {
      elements(*p.q.spec, elem),
      elements(*p.output.spec, std::to_string(dtype_size(p.output.spec->dtype)))};
  if (p.lse) terms.push_back(elements(*p.lse.spec, "4"));
  if (p.layout == AttentionLayout::Paged) {
    // The pages the sequences use, each read once, not the whole cache.
    terms.push_back(fmt::format("2 * {} * {} * {} * {} * {}", p.kv_rows_axis, p.page_size,
                                p.kv_heads, p.head_dim, elem));
  } else {
    terms.push_back(elements(*p.k.spec, "2 * " + elem));
  }
  for (const AttentionTensor* t : {&p.qo_indptr, &p.kv_indptr, &p.kv_indices, &p.last_page_len})
    if (*t) terms.push_back(elements(*t->spec, std::to_string(dtype_size(t->spec->dtype))));
  return fmt::format("{}", fmt::join(terms, " + "));
}

/// 2 FLOPs per multiply-add of q k^T and of p v, over the (query, key) pairs computed.
std::string flops_expr(const AttentionProblem& p) {
  const std::string per_pair = fmt::format("4 * {} * {}", p.q_heads, p.head_dim);
  const bool dense = p.dense();
  if (dense && p.decode) return fmt::format("{} * {} * {}", per_pair, p.batch_axis, p.kv_seq_axis);
  if (dense) {
    const std::string pairs =
        fmt::format("{} * {} * {}", p.batch_axis, p.q_seq_axis, p.kv_seq_axis);
    return p.causal && p.q_seq_axis == p.kv_seq_axis
               ? fmt::format("{} * {} * {} * ({} + 1) // 2", per_pair, p.batch_axis, p.q_seq_axis,
                             p.q_seq_axis)
               : fmt::format("{} * {}", per_pair, pairs);
  }
  if (p.decode && p.layout == AttentionLayout::Paged)
    return fmt::format("{} * {} * {}", per_pair, p.kv_rows_axis, p.page_size);
  return "";
}

}  // namespace

std::optional<FamilySignature> match_attention_signature(const Definition& def) {
  const std::string label = to_lower(def.op_type + " " + def.name);
  if (!mentions(label, {"attention", "attn", "gqa", "mha", "mqa", "sdpa"})) return std::nullopt;
  Definition candidate = def;
  candidate.ext.op_family = "attention";
  candidate.ext.op_params = {{"causal", says_causal(def)}, {"lse_base", lse_base(def)}};
  AttentionProblem problem;
  try {
    problem = read_attention_problem(candidate);
  } catch (const InputError&) {
    return std::nullopt;  // attention by name, but not tensors the family serves
  }
  FamilySignature signature;
  signature.match.ok = true;
  signature.match.family = problem.kv_fp4 ? "attention_nvfp4" : "attention";
  signature.match.op_params = candidate.ext.op_params;
  signature.match.summary = fmt::format(
      "attention ({} {}, {} query / {} key-value heads of {}{}) by its tensors; causal and the "
      "lse base read from the name and descriptions",
      attention_layout_name(problem.layout), problem.decode ? "decode" : "prefill", problem.q_heads,
      problem.kv_heads, problem.head_dim, problem.causal ? ", causal" : "");
  signature.bytes = bytes_expr(problem);
  signature.flops = flops_expr(problem);
  return signature;
}

}  // namespace kernelarc
