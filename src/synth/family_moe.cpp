// The moe binder: finds the hidden states, the routing input, the experts' weights and the output
// by their shapes (names break ties), reads the routing rule from op_params, and checks every
// shape. See docs/TEMPLATES.md ("Family: moe").
#include "synth/family_moe.h"

#include <fmt/format.h>

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
    find_expert_weights();
    find_activations_and_routing();
    assign_expert_weights();
    p_.output = read_output(p_.hidden);
    read_params();
    return p_;
  }

 private:
  /// The rank-2 inputs: [T, E] logits or an [E, H] router weight, and the [T, H] hidden states.
  void find_activations_and_routing() {
    std::vector<MoeTensor> matrices;
    for (std::size_t i = 0; i < def_.inputs.size(); ++i) {
      const TensorSpec& t = def_.inputs[i];
      if (t.is_scalar() || t.shape->size() == 3) continue;
      if (t.shape->size() == 1 && (*t.shape)[0] == experts_axis_) {
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
      if (shape(m)[0] == experts_axis_) {
        if (p_.router_weight) mismatch(def_, field(m), "a second [E, H] router weight");
        p_.router_weight = m;
      } else if (shape(m)[1] == experts_axis_) {
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
    require_float(p_.hidden);
    p_.tokens_axis = shape(p_.hidden)[0];
    hidden_axis_ = shape(p_.hidden)[1];
    p_.hidden_size = static_value(p_.hidden, 1, "hidden size");
    const MoeTensor& routing = p_.logits ? p_.logits : p_.router_weight;
    require_float(routing);
    if (p_.logits && shape(p_.logits)[0] != p_.tokens_axis)
      mismatch(def_, field(p_.logits), "expected [" + p_.tokens_axis + ", " + experts_axis_ + "]");
    if (p_.router_weight && shape(p_.router_weight)[1] != hidden_axis_)
      mismatch(def_, field(p_.router_weight),
               "expected [" + experts_axis_ + ", " + hidden_axis_ + "]");
    if (p_.bias) require_float(p_.bias);
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
        p_.routed_scaling = value.get<double>();
      } else if (!read_weight_param(key, value)) {
        mismatch(def_, field, std::string("unknown field (expected ") + kParams + ")");
      }
    }
    if (!has_top_k) mismatch(def_, "kernelarc.op_params.top_k", "required: experts per token");
    if (p_.top_k > p_.experts)
      mismatch(def_, "kernelarc.op_params.top_k",
               fmt::format("expected at most the {} experts, got {}", p_.experts, p_.top_k));
    if (p_.experts % p_.n_group != 0)
      mismatch(def_, "kernelarc.op_params.n_group",
               fmt::format("expected a divisor of the {} experts, got {}", p_.experts, p_.n_group));
    if (p_.topk_group > p_.n_group)
      mismatch(def_, "kernelarc.op_params.topk_group",
               fmt::format("expected at most n_group ({}), got {}", p_.n_group, p_.topk_group));
    if (p_.topk_group * (p_.experts / p_.n_group) < p_.top_k)
      mismatch(def_, "kernelarc.op_params.topk_group",
               fmt::format("the {} kept groups of {} experts hold fewer than top_k ({}) experts",
                           p_.topk_group, p_.experts / p_.n_group, p_.top_k));
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

MoeProblem read_moe_problem(const Definition& def) {
  return MoeProblemReader(def).read();
}

std::unique_ptr<FamilyBinder> make_moe_binder() {
  return std::make_unique<MoeBinder>();
}

}  // namespace kernelarc
