// The moe binder: finds the hidden states, the routing input, the experts' weights and the output
// by their shapes (names break ties), reads the routing rule from op_params, and checks every
// shape. See docs/TEMPLATES.md ("Family: moe").
#include "synth/family_moe.h"

#include <fmt/format.h>

#include "core/text.h"

#include "synth/family_moe_reader.h"
#include "synth/family_support.h"

namespace kernelarc {

namespace {

constexpr const char* kParams =
    "top_k, scoring, renormalize, n_group, topk_group, group_score, routed_scaling_factor, "
    "activation, gate_up_order";

class MoeProblemReader : MoeReaderBase {
 public:
  explicit MoeProblemReader(const Definition& def) : MoeReaderBase(def, p_) {}

  MoeProblem read() {
    fp8_allowed_ = true;
    find_scalars();
    find_expert_weights();
    find_activations_and_routing();
    assign_expert_weights();
    read_weight_scales();
    read_hidden_scale();
    p_.output = read_output(p_.hidden);
    read_params();
    return p_;
  }

 private:
  static bool is_scalar_input(const TensorSpec& t) { return t.is_scalar() || t.shape->empty(); }

  /// The scalars the family reads: the local experts' offset and the routing weights' factor.
  void find_scalars() {
    for (std::size_t i = 0; i < def_.inputs.size(); ++i) {
      const TensorSpec& t = def_.inputs[i];
      if (!is_scalar_input(t)) continue;
      const MoeTensor scalar{&t, static_cast<int>(i)};
      const std::string name = to_lower(t.name);
      if (name.find("expert_offset") != std::string::npos) {
        if (t.dtype != DType::Int32 && t.dtype != DType::Int64)
          mismatch(def_, field(scalar) + ".dtype",
                   "expected int32 or int64 (the global id of the first local expert)");
        p_.local_offset = scalar;
      } else if (is_routed_scaling_input(t)) {
        if (t.dtype != DType::Float32 && t.dtype != DType::Float64)
          mismatch(def_, field(scalar) + ".dtype", "expected float32 or float64");
        p_.scaling = scalar;
      } else {
        mismatch(def_, field(scalar),
                 "a scalar the moe family does not read (it reads local_expert_offset and "
                 "routed_scaling_factor)");
      }
    }
  }

  /// The experts the router chooses among: the weights' unless a local offset says the weights
  /// hold some of them; then the routing input, found by name, tells.
  std::string find_routed_axis() const {
    if (!p_.local_offset) return experts_axis_;
    for (const TensorSpec& t : def_.inputs) {
      if (is_scalar_input(t) || t.shape->size() != 2 || is_scale(t)) continue;
      const std::string name = to_lower(t.name);
      for (const char* word : {"logit", "gating_output", "scores"})
        if (name.find(word) != std::string::npos) return (*t.shape)[1];
      for (const char* word : {"router", "gate"})
        if (name.find(word) != std::string::npos) return (*t.shape)[0];
    }
    mismatch(def_, "inputs",
             "with a local expert offset, expected the routing input named as the family names "
             "it: [T, E] router_logits (routing_logits, gating_output, logits, scores) or an "
             "[E, H] gate_weight (router_weight)");
  }

  /// The rank-2 inputs: [T, E] logits or an [E, H] router weight, and the [T, H] hidden states.
  void find_activations_and_routing() {
    const std::string routed_axis = find_routed_axis();
    std::vector<MoeTensor> matrices;
    for (std::size_t i = 0; i < def_.inputs.size(); ++i) {
      const TensorSpec& t = def_.inputs[i];
      if (is_scalar_input(t) || t.shape->size() == 3 || is_scale(t)) continue;
      if (t.shape->size() == 1 && (*t.shape)[0] == routed_axis) {
        if (p_.bias) mismatch(def_, "inputs." + t.name, "a second [E] input; expected one bias");
        p_.bias = {&t, static_cast<int>(i)};
        continue;
      }
      if (t.shape->size() != 2)
        mismatch(def_, "inputs." + t.name,
                 "not a mixture-of-experts input: expected [T, H] hidden states, [T, E] logits "
                 "or an [E, H] router weight, an [E] bias, and rank-3 expert weights");
      matrices.push_back({&t, static_cast<int>(i)});
    }
    for (const MoeTensor& m : matrices) {
      if (shape(m)[0] == routed_axis) {
        if (p_.router_weight) mismatch(def_, field(m), "a second [E, H] router weight");
        p_.router_weight = m;
      } else if (shape(m)[1] == routed_axis) {
        if (p_.logits) mismatch(def_, field(m), "a second [T, E] logits input");
        p_.logits = m;
      } else {
        if (p_.hidden) mismatch(def_, field(m), "a second [T, H] input; expected one");
        p_.hidden = m;
      }
    }
    if (!p_.hidden) mismatch(def_, "inputs", "expected the hidden states, [T, H]");
    if (static_cast<bool>(p_.logits) == static_cast<bool>(p_.router_weight))
      mismatch(def_, "inputs",
               "expected exactly one routing input: [T, E] logits or an [E, H] router weight");
    require_float_or_fp8(p_.hidden);
    p_.tokens_axis = shape(p_.hidden)[0];
    hidden_axis_ = shape(p_.hidden)[1];
    p_.hidden_size = static_value(p_.hidden, 1, "hidden size");
    const MoeTensor& routing = p_.logits ? p_.logits : p_.router_weight;
    require_float(routing);
    if (p_.logits && shape(p_.logits)[0] != p_.tokens_axis)
      mismatch(def_, field(p_.logits), "expected [" + p_.tokens_axis + ", " + routed_axis + "]");
    if (p_.router_weight && shape(p_.router_weight)[1] != hidden_axis_)
      mismatch(def_, field(p_.router_weight),
               "expected [" + routed_axis + ", " + hidden_axis_ + "]");
    if (p_.bias) require_float(p_.bias);
    p_.routed_experts = static_value(routing, p_.logits ? 1 : 0,
                                     p_.local_offset ? "routed expert count" : "expert count");
    if (p_.routed_experts < p_.experts)
      mismatch(def_, field(routing),
               fmt::format("routes among {} experts, fewer than the {} local experts' weights",
                           p_.routed_experts, p_.experts));
  }

  /// float8 hidden states come with float8 weights and their float32 scales, one per token and
  /// 128 features, token-major or (FlashInfer's) block-major.
  void read_hidden_scale() {
    const bool hidden_fp8 = p_.hidden.spec->dtype == DType::Float8E4M3FN;
    if (hidden_fp8 != p_.fp8())
      mismatch(def_, field(p_.hidden) + ".dtype",
               hidden_fp8 ? "float8_e4m3fn hidden states need float8_e4m3fn expert weights"
                          : "float8_e4m3fn expert weights need float8_e4m3fn hidden states (with "
                            "their block scales)");
    if (!hidden_fp8) return;
    p_.hidden_scale = scale_of(p_.hidden);
    const int64_t blocks = p_.hidden_size / kMoeScaleBlock;
    const std::string want =
        fmt::format("float32 [{0}, {1}] or [{1}, {0}]: one scale per token and {2} features",
                    p_.tokens_axis, blocks, kMoeScaleBlock);
    if (!p_.hidden_scale)
      mismatch(def_, field(p_.hidden),
               "float8_e4m3fn hidden states need their scales, an input named " +
                   p_.hidden.spec->name + "_scale, " + want);
    const std::vector<std::string>& dims = shape(p_.hidden_scale);
    const auto is_blocks = [&](const std::string& axis) {
      const auto it = known_.find(axis);
      return it != known_.end() && it->second == blocks;
    };
    const bool tokens_first = dims.size() == 2 && dims[0] == p_.tokens_axis && is_blocks(dims[1]);
    const bool blocks_first = dims.size() == 2 && dims[1] == p_.tokens_axis && is_blocks(dims[0]);
    if (p_.hidden_scale.spec->dtype != DType::Float32 || !(tokens_first || blocks_first))
      mismatch(def_, field(p_.hidden_scale), "expected " + want);
    p_.hidden_scale_tokens_first = tokens_first;
  }

  void read_params() {
    bool has_top_k = false;
    for (const auto& [key, value] : def_.ext.op_params.items()) {
      const std::string field = "kernelarc.op_params." + key;
      if (key == "top_k") {
        p_.top_k = positive_int(value, field);
        has_top_k = true;
      } else if (key == "scoring") {
        p_.sigmoid = choice(value, field, {"softmax", "sigmoid"}) == std::string("sigmoid");
      } else if (key == "renormalize") {
        p_.renormalize = boolean(value, field);
      } else if (key == "n_group") {
        p_.n_group = positive_int(value, field);
      } else if (key == "topk_group") {
        p_.topk_group = positive_int(value, field);
      } else if (key == "group_score") {
        p_.group_score_max = choice(value, field, {"top2_sum", "max"}) == std::string("max");
      } else if (key == "routed_scaling_factor") {
        if (!value.is_number() || !(value.get<double>() > 0))
          mismatch(def_, field, "expected a positive number");
        if (p_.scaling)
          mismatch(def_, field, "given twice: the input " + p_.scaling.spec->name + " holds it");
        p_.routed_scaling = value.get<double>();
      } else if (!read_weight_param(key, value)) {
        mismatch(def_, field, std::string("unknown field (expected ") + kParams + ")");
      }
    }
    if (!has_top_k) mismatch(def_, "kernelarc.op_params.top_k", "required: experts per token");
    const int64_t routed = p_.routed_experts;
    if (p_.top_k > routed)
      mismatch(def_, "kernelarc.op_params.top_k",
               fmt::format("expected at most the {} experts, got {}", routed, p_.top_k));
    if (routed % p_.n_group != 0)
      mismatch(def_, "kernelarc.op_params.n_group",
               fmt::format("expected a divisor of the {} experts, got {}", routed, p_.n_group));
    if (p_.topk_group > p_.n_group)
      mismatch(def_, "kernelarc.op_params.topk_group",
               fmt::format("expected at most n_group ({}), got {}", p_.n_group, p_.topk_group));
    if (p_.topk_group * (routed / p_.n_group) < p_.top_k)
      mismatch(def_, "kernelarc.op_params.topk_group",
               fmt::format("the {} kept groups of {} experts hold fewer than top_k ({}) experts",
                           p_.topk_group, routed / p_.n_group, p_.top_k));
    check_weight_params();
  }

  MoeProblem p_;
};

class MoeBinder : public FamilyBinder {
 public:
  std::vector<std::string> families() const override { return {"moe"}; }

  FamilyBinding bind(const Definition& def, const KernelTemplate& kernel) const override {
    require_moe_template(def, kernel);
    const MoeProblem p = read_moe_problem(def);
    FamilyBinding binding = moe_binding(generate_moe_header(p, def, kernel), p.tokens_axis, p,
                                        p.hidden_size, p.top_k, p.hidden.spec->dtype);
    binding.constants["ROUTER_WEIGHT"] = p.router_weight ? 1 : 0;
    binding.constants["EXPERTS"] = p.routed_experts;  // LOCAL_EXPERTS: the weights' (moe_binding)
    return binding;
  }
};

}  // namespace

const char* moe_activation_name(MoeActivation activation) {
  switch (activation) {
    case MoeActivation::Silu:
      return "silu";
    case MoeActivation::Gelu:
      return "gelu";
    case MoeActivation::GeluTanh:
      break;
  }
  return "gelu_tanh";
}

bool is_routed_scaling_input(const TensorSpec& t) {
  return (t.is_scalar() || t.shape->empty()) &&
         to_lower(t.name).find("routed_scaling") != std::string::npos;
}

MoeProblem read_moe_problem(const Definition& def) {
  return MoeProblemReader(def).read();
}

std::unique_ptr<FamilyBinder> make_moe_binder() {
  return std::make_unique<MoeBinder>();
}

}  // namespace kernelarc
