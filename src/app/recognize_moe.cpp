#include "app/recognize_moe.h"

#include <algorithm>
#include <regex>
#include <vector>

#include <fmt/format.h>

#include "core/dtype.h"
#include "core/text.h"
#include "synth/family_moe.h"
#include "synth/family_moe_backward.h"

namespace kernelarc {

namespace {

/// The first capture of `pattern` (case-insensitive) in `text`, or "".
std::string first_capture(const std::string& text, const char* pattern) {
  std::smatch found;
  if (std::regex_search(text, found, std::regex(pattern, std::regex::icase))) return found[1];
  return "";
}

std::optional<int64_t> top_k_of(const Definition& def) {
  for (const Axis& axis : def.axes) {
    const std::string name = to_lower(axis.name);
    if ((name == "top_k" || name == "topk" || name == "num_experts_per_tok" ||
         name == "experts_per_token") &&
        axis.kind == AxisKind::Const)
      return axis.value;
  }
  for (const char* pattern : {R"((?:top_?k|num_experts_per_tok|experts_per_token)\s*=\s*(\d+))",
                              R"(\.topk\([^,()]*(?:\([^()]*\))?[^,()]*,\s*(?:k\s*=\s*)?(\d+))",
                              R"(\.topk\(\s*(?:k\s*=\s*)?(\d+))"}) {
    const std::string k = first_capture(def.reference, pattern);
    if (!k.empty()) return std::stoll(k);
  }
  const std::string k = first_capture(def.name + " " + def.description, R"(top[-_]?k?[-_]?(\d+))");
  if (!k.empty()) return std::stoll(k);
  return std::nullopt;
}

/// True or False assigned to one of `names` in the reference, if any.
std::optional<bool> assigned_flag(const std::string& reference, const char* names) {
  const std::string value =
      first_capture(reference, fmt::format(R"((?:{})\s*=\s*(True|False))", names).c_str());
  if (value.empty()) return std::nullopt;
  return to_lower(value) == "true";
}

/// "sigmoid" or "softmax": an assignment (`scoring_func = "sigmoid"`, `SCORING = "softmax"`)
/// decides; else the one of the two the reference calls (a sigmoid also written out, 1 / (1 +
/// exp(-x))), when it calls only one; else softmax.
std::string scoring_of(const std::string& reference) {
  const std::string assigned =
      to_lower(first_capture(reference, R"(scoring(?:_func)?\s*=\s*["'](softmax|sigmoid)["'])"));
  if (!assigned.empty()) return assigned;
  const bool sigmoid =
      std::regex_search(reference, std::regex(R"(sigmoid\()")) ||
      std::regex_search(
          reference,
          std::regex(R"(1(?:\.0*)?\s*/\s*\(\s*1(?:\.0*)?\s*\+\s*(?:torch\.)?exp\(\s*-)"));
  const bool softmax = std::regex_search(reference, std::regex(R"(softmax\()"));
  return sigmoid && !softmax ? "sigmoid" : "softmax";
}

/// op_params.activation from the reference: an assignment (`ACTIVATION = "silu"`, `hidden_act =
/// "gelu_pytorch_tanh"`) decides; else a GELU (tanh-approximated or not) it calls; else nothing
/// (SiLU, the families' default).
void add_activation(const std::string& reference, OrderedJson& params) {
  const std::string assigned = to_lower(first_capture(
      reference,
      R"((?:activation|hidden_act|act_fn|act)\s*=\s*["'](silu|swish|gelu|gelu_tanh|gelu_pytorch_tanh)["'])"));
  if (assigned == "silu" || assigned == "swish") return;
  if (assigned == "gelu") {
    params["activation"] = "gelu";
  } else if (!assigned.empty() ||
             std::regex_search(reference, std::regex(R"(gelu[\s\S]{0,80}tanh|gelu_tanh)"))) {
    params["activation"] = "gelu_tanh";
  } else if (std::regex_search(reference, std::regex(R"(gelu)"))) {
    params["activation"] = "gelu";
  }
}

/// Whether the reference divides by a sum: `w / w.sum(`, `w /= w.sum(`, `/ (w.sum(`,
/// `/ torch.sum(`, or by a name it assigned a sum to (`total = w.sum(-1) + 1e-20; w / total`).
bool divides_by_a_sum(const std::string& reference) {
  if (std::regex_search(reference, std::regex(R"(/=?\s*\(?\s*[\w\.\[\]]+\.sum\()")) ||
      std::regex_search(reference, std::regex(R"(/=?\s*\(?\s*torch\.sum\()")))
    return true;
  const std::regex sum_assignment(R"((\w+)\s*=\s*[^\n=]*\.sum\()");
  for (auto it = std::sregex_iterator(reference.begin(), reference.end(), sum_assignment);
       it != std::sregex_iterator(); ++it)
    if (std::regex_search(reference, std::regex(R"(/=?\s*\(?\s*)" + (*it)[1].str() + R"(\b)")))
      return true;
  return false;
}

/// Whether a fused gate-and-up product's second half is the one the activation takes (FlashInfer's
/// and TensorRT-LLM's order, op_params.gate_up_order "up_gate"): `p[:, I:]` (or `p[..., I:]`), the
/// name bound to it, or the second of `a, b = p.chunk(2`, is the argument of silu, gelu or
/// sigmoid, or of a SiLU written out (x / (1 + exp(-x))). False where the reference shows no such
/// split.
bool activation_takes_second_half(const std::string& reference) {
  // The slice itself as the argument: silu(p[:, I:]).
  if (std::regex_search(
          reference,
          std::regex(R"((?:silu|gelu|sigmoid)\(\s*\w+\[\s*(?::|\.\.\.)\s*,\s*\w+\s*:\s*\])")))
    return true;
  std::vector<std::string> second;
  const std::regex slice(R"((\w+)\s*=\s*\w+\[\s*(?::|\.\.\.)\s*,\s*\w+\s*:\s*\])");
  const std::regex chunk(R"(\w+\s*,\s*(\w+)\s*=\s*[\w\.]+\.chunk\(\s*2)");
  for (const std::regex* pattern : {&slice, &chunk})
    for (auto it = std::sregex_iterator(reference.begin(), reference.end(), *pattern);
         it != std::sregex_iterator(); ++it)
      second.push_back((*it)[1].str());
  for (const std::string& name : second) {
    const std::string activated = R"((?:silu|gelu|sigmoid)\(\s*)" + name + R"(\b|\b)" + name +
                                  R"(\s*/\s*\(\s*1(?:\.0*)?\s*\+\s*(?:torch\.)?exp\(\s*-\s*)" +
                                  name + R"(\b)";
    if (std::regex_search(reference, std::regex(activated))) return true;
  }
  return false;
}

OrderedJson routing_params(const Definition& def, int64_t top_k) {
  const std::string& ref = def.reference;
  OrderedJson params = {{"top_k", top_k}};
  params["scoring"] = scoring_of(ref);
  const std::optional<bool> flag = assigned_flag(ref, "norm_topk_prob|renormalize");
  params["renormalize"] = flag.value_or(divides_by_a_sum(ref));
  for (const char* name : {"n_group", "topk_group"}) {
    const std::string value = first_capture(ref, fmt::format(R"({}\s*=\s*(\d+))", name).c_str());
    if (!value.empty() && std::stoll(value) > 1) params[name] = std::stoll(value);
  }
  // The factor from the text, unless an input holds it (the family reads that one).
  const bool scaling_input =
      std::any_of(def.inputs.begin(), def.inputs.end(), is_routed_scaling_input);
  const std::string scaling =
      first_capture(ref, R"(routed_scaling_factor\s*=\s*([0-9]*\.?[0-9]+(?:[eE][-+]?\d+)?))");
  if (!scaling_input && !scaling.empty() && std::stod(scaling) > 0)
    params["routed_scaling_factor"] = std::stod(scaling);
  add_activation(ref, params);
  if (activation_takes_second_half(ref)) params["gate_up_order"] = "up_gate";
  return params;
}

std::string bytes_expr(const MoeProblem& p) {
  const auto size = [](const MoeTensor& t) { return std::to_string(dtype_size(t.spec->dtype)); };
  const std::string tokens = p.tokens_axis;
  // The weights of the experts the tokens can reach, each read once.
  const std::string experts_used = fmt::format("min({}, {} * {})", p.experts, tokens, p.top_k);
  std::string bytes =
      fmt::format("2 * {} * {} * {} + {} * 3 * {} * {} * {}", tokens, p.hidden_size, size(p.hidden),
                  experts_used, p.hidden_size, p.inter, size(p.w_down));
  if (p.logits)
    bytes += fmt::format(" + {} * {} * {}", tokens, p.routed_experts, size(p.logits));
  else
    bytes += fmt::format(" + {} * {} * {}", p.routed_experts, p.hidden_size, size(p.router_weight));
  return bytes;
}

std::string flops_expr(const MoeProblem& p) {
  const std::string t = p.tokens_axis;
  std::string flops;
  if (p.experts == p.routed_experts) {
    flops = fmt::format("6 * {} * {} * {} * {}", t, p.top_k, p.hidden_size, p.inter);
  } else {
    // Local experts: on average E_local / E of the slots are this call's.
    const int64_t per_token = 6 * p.top_k * p.experts;
    flops = per_token % p.routed_experts == 0
                ? fmt::format("{} * {} * {} * {}", per_token / p.routed_experts, t, p.hidden_size,
                              p.inter)
                : fmt::format("{} * {} * {} * {} / {}", per_token, t, p.hidden_size, p.inter,
                              p.routed_experts);
  }
  if (p.router_weight)
    flops += fmt::format(" + 2 * {} * {} * {}", t, p.routed_experts, p.hidden_size);
  return flops;
}

/// The experts' backward pass: the routing given as [T, K] ids and weights, gradients out.
std::optional<FamilySignature> match_moe_backward(const Definition& def) {
  Definition candidate = def;
  candidate.ext.op_family = "moe_backward";
  candidate.ext.op_params = OrderedJson::object();
  add_activation(def.reference, candidate.ext.op_params);
  MoeBackwardProblem p;
  try {
    p = read_moe_backward_problem(candidate);
  } catch (const InputError&) {
    return std::nullopt;
  }
  FamilySignature signature;
  signature.match.ok = true;
  signature.match.family = "moe_backward";
  signature.match.op_params = candidate.ext.op_params;
  signature.match.summary = fmt::format(
      "the backward pass of a mixture of experts ({} experts, top {}, hidden {}, intermediate "
      "{}) given its routing, by its tensors; the activation ({}) read from the reference",
      p.experts, p.top_k, p.hidden_size, p.inter, moe_activation_name(p.activation));
  const std::string t = p.tokens_axis;
  // x, the output gradient and dx; ids, weights and their gradient; the weights read and their
  // gradients written.
  signature.bytes =
      fmt::format("3 * {} * {} * {} + 3 * {} * {} * 8 + 2 * 3 * {} * {} * {} * {}", t,
                  p.hidden_size, dtype_size(p.hidden.spec->dtype), t, p.top_k, p.experts,
                  p.hidden_size, p.inter, dtype_size(p.w_down.spec->dtype));
  // The forward's two products recomputed, and two backward products per weight.
  signature.flops = fmt::format("{} * {} * {} * {} * {}", p.grad_topk_weights ? 18 : 16, t, p.top_k,
                                p.hidden_size, p.inter);
  return signature;
}

}  // namespace

std::optional<FamilySignature> match_moe_signature(const Definition& def) {
  const std::string label = to_lower(def.op_type + " " + def.name);
  if (!mentions(label, {"moe", "expert", "mixture"})) return std::nullopt;
  if (auto backward = match_moe_backward(def)) return backward;
  const std::optional<int64_t> top_k = top_k_of(def);
  if (!top_k || *top_k < 1) return std::nullopt;
  Definition candidate = def;
  candidate.ext.op_family = "moe";
  candidate.ext.op_params = routing_params(def, *top_k);
  MoeProblem problem;
  try {
    problem = read_moe_problem(candidate);
  } catch (const InputError&) {
    return std::nullopt;  // experts by name, but not tensors (or a rule) the family serves
  }
  FamilySignature signature;
  signature.match.ok = true;
  signature.match.family = "moe";
  signature.match.op_params = candidate.ext.op_params;
  const std::string experts =
      problem.experts == problem.routed_experts
          ? fmt::format("{} experts", problem.experts)
          : fmt::format("{} of {} experts local", problem.experts, problem.routed_experts);
  signature.match.summary = fmt::format(
      "mixture of experts ({}, top {}, {} scoring, hidden {}, intermediate {}{}) by its tensors; "
      "the routing rule read from the reference",
      experts, problem.top_k, problem.sigmoid ? "sigmoid" : "softmax", problem.hidden_size,
      problem.inter, problem.fp8() ? ", float8 with block scales" : "");
  signature.bytes = bytes_expr(problem);
  signature.flops = flops_expr(problem);
  return signature;
}

}  // namespace kernelarc
