// The moe binder: finds the hidden states, the routing input, the experts' weights and the output
// by their shapes (names break ties), reads the routing rule from op_params, and checks every
// shape. See docs/TEMPLATES.md ("Family: moe").
#include "synth/family_moe.h"

#include <algorithm>
#include <initializer_list>

#include <fmt/format.h>

#include "core/text.h"
#include "synth/family_support.h"

namespace kernelarc {

namespace {

bool name_has(const TensorSpec& t, std::initializer_list<const char*> words) {
  const std::string name = to_lower(t.name);
  return std::any_of(words.begin(), words.end(),
                     [&](const char* word) { return name.find(word) != std::string::npos; });
}

constexpr const char* kParams =
    "top_k, scoring, renormalize, n_group, topk_group, group_score, routed_scaling_factor, "
    "activation, gate_up_order";

class MoeProblemReader {
 public:
  explicit MoeProblemReader(const Definition& def) : def_(def), known_(static_axes(def)) {}

  MoeProblem read() {
    find_expert_weights();
    find_activations_and_routing();
    assign_expert_weights();
    check_output();
    read_params();
    return p_;
  }

 private:
  const std::vector<std::string>& shape(const MoeTensor& t) const { return *t.spec->shape; }
  std::string field(const MoeTensor& t, const char* kind = "inputs") const {
    return std::string(kind) + "." + t.spec->name;
  }

  int64_t static_value(const MoeTensor& t, std::size_t dim, const char* what) const {
    const std::string& axis = shape(t)[dim];
    const auto it = known_.find(axis);
    if (it == known_.end())
      mismatch(def_, field(t), fmt::format("the {} ({}) must be a const or expr axis", what, axis));
    if (it->second <= 0)
      mismatch(def_, field(t), fmt::format("the {} ({}) must be positive", what, axis));
    return it->second;
  }

  void require_float(const MoeTensor& t, const char* kind = "inputs") const {
    if (!is_packed_float_dtype(t.spec->dtype))
      mismatch(
          def_, field(t, kind) + ".dtype",
          "expected float32, float16 or bfloat16, got " + std::string(dtype_name(t.spec->dtype)));
  }

  /// The rank-3 inputs are the experts' weights, [E, out, in]; they share E.
  void find_expert_weights() {
    for (std::size_t i = 0; i < def_.inputs.size(); ++i) {
      const TensorSpec& t = def_.inputs[i];
      if (!t.is_scalar() && t.shape->size() == 3) weights_.push_back({&t, static_cast<int>(i)});
    }
    if (weights_.size() != 2 && weights_.size() != 3)
      mismatch(def_, "inputs",
               fmt::format("expected the experts' weights as 2 tensors ([E, 2I, H] gate and up, "
                           "[E, H, I] down) or 3 ([E, I, H] gate, up, [E, H, I] down), found {} "
                           "of rank 3",
                           weights_.size()));
    experts_axis_ = shape(weights_[0])[0];
    for (const MoeTensor& w : weights_) {
      if (shape(w)[0] != experts_axis_)
        mismatch(def_, field(w),
                 "expected the experts axis " + experts_axis_ + " first, as in " +
                     weights_[0].spec->name);
      require_float(w);
      if (w.spec->dtype != weights_[0].spec->dtype)
        mismatch(def_, field(w) + ".dtype",
                 "expected the dtype of " + weights_[0].spec->name + ", " +
                     std::string(dtype_name(weights_[0].spec->dtype)));
    }
    p_.experts = static_value(weights_[0], 0, "expert count");
  }

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

  /// Down projects I to H ([E, H, I]); gate and up project H to I. Shapes decide, and names
  /// where shapes cannot (I == H).
  void assign_expert_weights() {
    std::vector<MoeTensor> into_hidden, from_hidden;  // [E, H, *] and [E, *, H]
    for (const MoeTensor& w : weights_) {
      const bool ends_hidden = shape(w)[2] == hidden_axis_;
      const bool starts_hidden = shape(w)[1] == hidden_axis_;
      if (!ends_hidden && !starts_hidden)
        mismatch(
            def_, field(w),
            "expected [E, out, in] weights with the hidden size " + hidden_axis_ + " as in or out");
      if (starts_hidden && (!ends_hidden || name_has(*w.spec, {"down", "w2"})))
        into_hidden.push_back(w);
      else
        from_hidden.push_back(w);
    }
    if (into_hidden.size() != 1)
      mismatch(def_, "inputs",
               "expected one down projection [E, H, I] (named down or w2 when I equals H)");
    p_.w_down = into_hidden[0];
    const std::string& inter_axis = shape(p_.w_down)[2];
    p_.inter = static_value(p_.w_down, 2, "intermediate size");
    if (from_hidden.size() == 1) {
      p_.w13 = from_hidden[0];
      if (static_value(p_.w13, 1, "gate and up rows") != 2 * p_.inter)
        mismatch(def_, field(p_.w13),
                 fmt::format("expected [E, 2 * {}, H]: the gate and up rows of {} each", inter_axis,
                             p_.inter));
      return;
    }
    // Separate gate and up: the one named up (or w3) is up.
    const bool first_is_up = name_has(*from_hidden[0].spec, {"up", "w3"}) &&
                             !name_has(*from_hidden[0].spec, {"gate", "w1"});
    p_.w_gate = from_hidden[first_is_up ? 1 : 0];
    p_.w_up = from_hidden[first_is_up ? 0 : 1];
    for (const MoeTensor* w : {&p_.w_gate, &p_.w_up})
      if (shape(*w)[1] != inter_axis)
        mismatch(def_, field(*w),
                 "expected [" + experts_axis_ + ", " + inter_axis + ", " + hidden_axis_ + "]");
  }

  void check_output() {
    if (def_.outputs.size() != 1) mismatch(def_, "outputs", "expected one output, [T, H]");
    p_.output = {&def_.outputs[0], 0};
    if (p_.output.spec->is_scalar() || shape(p_.output) != shape(p_.hidden))
      mismatch(
          def_, field(p_.output, "outputs"),
          "expected the shape of " + p_.hidden.spec->name + ", " + shape_text(shape(p_.hidden)));
    if (p_.output.spec->dtype != p_.hidden.spec->dtype)
      mismatch(def_, field(p_.output, "outputs") + ".dtype",
               "expected the dtype of " + p_.hidden.spec->name + ", " +
                   std::string(dtype_name(p_.hidden.spec->dtype)));
  }

  bool boolean(const OrderedJson& value, const std::string& field) const {
    if (!value.is_boolean()) mismatch(def_, field, "expected true or false");
    return value.get<bool>();
  }

  int64_t positive_int(const OrderedJson& value, const std::string& field) const {
    if (!value.is_number_integer() || value.get<int64_t>() < 1)
      mismatch(def_, field, "expected a positive integer, got " + value.dump());
    return value.get<int64_t>();
  }

  std::string choice(const OrderedJson& value, const std::string& field,
                     std::initializer_list<const char*> allowed) const {
    std::string expected;
    for (const char* name : allowed)
      expected += (expected.empty() ? "\"" : ", \"") + std::string(name) + "\"";
    if (value.is_string())
      for (const char* name : allowed)
        if (value.get<std::string>() == name) return name;
    mismatch(def_, field, "expected " + expected + ", got " + value.dump());
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
      } else if (key == "activation") {
        const std::string name = choice(value, field, {"silu", "gelu", "gelu_tanh"});
        p_.activation = name == "silu"   ? MoeActivation::Silu
                        : name == "gelu" ? MoeActivation::Gelu
                                         : MoeActivation::GeluTanh;
      } else if (key == "gate_up_order") {
        p_.up_first = choice(value, field, {"gate_up", "up_gate"}) == std::string("up_gate");
      } else {
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
    if (p_.up_first && !p_.w13)
      mismatch(def_, "kernelarc.op_params.gate_up_order",
               "applies to a fused gate-and-up weight only");
  }

  const Definition& def_;
  const AxisValues known_;
  MoeProblem p_;
  std::vector<MoeTensor> weights_;
  std::string experts_axis_, hidden_axis_;
};

class MoeBinder : public FamilyBinder {
 public:
  std::vector<std::string> families() const override { return {"moe"}; }

  FamilyBinding bind(const Definition& def, const KernelTemplate& kernel) const override {
    if (!kernel.serves(def.ext.op_family))
      mismatch(def, "kernelarc.op_family",
               "template " + kernel.name + " does not serve \"" + def.ext.op_family + "\"");
    if (kernel.build != TemplateBuild::SharedObject)
      mismatch(def, "kernelarc.op_family",
               "the moe family binds shared-object templates (ka_bind), not " + kernel.name);
    const MoeProblem p = read_moe_problem(def);
    FamilyBinding binding;
    binding.header = generate_moe_header(p, def, kernel);
    binding.sizes["TOKENS"] = p.tokens_axis;
    binding.constants["EXPERTS"] = p.experts;
    binding.constants["HIDDEN"] = p.hidden_size;
    binding.constants["INTER"] = p.inter;
    binding.constants["TOP_K"] = p.top_k;
    binding.constants["ELEM_BYTES"] = static_cast<int64_t>(dtype_size(p.hidden.spec->dtype));
    binding.constants["W_BYTES"] = static_cast<int64_t>(dtype_size(p.w_down.spec->dtype));
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
