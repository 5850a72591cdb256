// The mlp binder: a dense gated MLP, down(act(x gate^T) * (x up^T)), the decoder layer's MLP
// block. It is read as a mixture-of-experts layer of one expert that every token takes with
// weight one (no routing), so that the moe family's header and its grouped GEMMs serve it: the
// weights are found by shape as the moe binder finds an expert's, minus the experts axis. See
// docs/TEMPLATES.md ("Family: mlp").
#include <map>
#include <utility>

#include <fmt/format.h>

#include "synth/family_moe.h"
#include "synth/family_moe_reader.h"
#include "synth/family_support.h"

namespace kernelarc {

namespace {

constexpr const char* kMlpParams = "gated, activation, gate_up_order, gate, up, down";

class MlpProblemReader : MoeReaderBase {
 public:
  explicit MlpProblemReader(const Definition& def) : MoeReaderBase(def, p_, /*dense=*/true) {}

  MoeProblem read() {
    find_hidden();
    find_expert_weights();
    assign_expert_weights();
    p_.output = read_output(p_.hidden);
    read_params();
    apply_weight_names();
    p_.top_k = 1;
    p_.routed_experts = p_.experts;
    return p_;
  }

 private:
  /// The hidden states: the first rank-2 input shaped as the output, [T, H] (T may be static,
  /// as in a fixed-shape benchmark, so shapes alone cannot tell them from a weight). Every other
  /// input must be a weight.
  void find_hidden() {
    const TensorSpec* out = def_.outputs.size() == 1 ? &def_.outputs[0] : nullptr;
    for (std::size_t i = 0; i < def_.inputs.size() && out && !out->is_scalar(); ++i) {
      const TensorSpec& t = def_.inputs[i];
      if (!t.is_scalar() && t.shape->size() == 2 && *t.shape == *out->shape) {
        p_.hidden = {&t, static_cast<int>(i)};
        break;
      }
    }
    if (!p_.hidden)
      mismatch(def_, "inputs", "expected the hidden states, [T, H], shaped as the one output");
    dense_hidden_ = p_.hidden.spec;
    for (const TensorSpec& t : def_.inputs) {
      if (&t == dense_hidden_) continue;
      if (!is_weight(t))
        mismatch(def_, "inputs." + t.name,
                 "not an MLP input: expected [T, H] hidden states and [out, in] weights");
      if (*t.shape == *out->shape)
        mismatch(def_, "inputs." + t.name,
                 "a second input shaped as the output (a residual?): the mlp family reads one, "
                 "the hidden states " +
                     p_.hidden.spec->name);
    }
    require_float(p_.hidden);
    p_.tokens_axis = shape(p_.hidden)[0];
    hidden_axis_ = shape(p_.hidden)[1];
    p_.hidden_size = static_value(p_.hidden, 1, "hidden size");
  }

  void read_params() {
    for (const auto& [key, value] : def_.ext.op_params.items()) {
      const std::string field = "kernelarc.op_params." + key;
      if (key == "gated") {
        if (!boolean(value, field))
          mismatch(def_, field,
                   "the mlp family serves gated MLPs, down(act(x gate^T) * (x up^T)); an "
                   "ungated one is a GEMM, an activation and a GEMM");
      } else if (key == "gate" || key == "up" || key == "down") {
        if (!value.is_string()) mismatch(def_, field, "expected the name of an input");
        names_[key] = value.get<std::string>();
      } else if (!read_weight_param(key, value)) {
        mismatch(def_, field, std::string("unknown field (expected ") + kMlpParams + ")");
      }
    }
    check_weight_params();
  }

  /// op_params.gate / up / down name the weights (recognition reads them off the graph, where
  /// the activation says which is the gate): they override the guess from names, and must name
  /// the weights the shapes found.
  void apply_weight_names() {
    const auto named = [&](const MoeTensor& t, const char* role) {
      const auto it = names_.find(role);
      return it != names_.end() && t && t.spec->name == it->second;
    };
    if (names_.count("gate") || names_.count("up")) {
      if (p_.fused_gate_up())
        mismatch(def_, "kernelarc.op_params.gate",
                 "names separate gate and up weights, but " + p_.w13.spec->name + " holds both");
      if (!named(p_.w_gate, "gate") && !named(p_.w_up, "up")) std::swap(p_.w_gate, p_.w_up);
      for (const auto& [t, role] : {std::pair{&p_.w_gate, "gate"}, std::pair{&p_.w_up, "up"}})
        if (names_.count(role) && !named(*t, role))
          mismatch(def_, std::string("kernelarc.op_params.") + role,
                   "\"" + names_.at(role) + "\" is not one of the [I, H] weights (" +
                       p_.w_gate.spec->name + ", " + p_.w_up.spec->name + ")");
    }
    if (names_.count("down") && !named(p_.w_down, "down"))
      mismatch(
          def_, "kernelarc.op_params.down",
          "\"" + names_.at("down") + "\" is not the [H, I] weight (" + p_.w_down.spec->name + ")");
  }

  MoeProblem p_;
  std::map<std::string, std::string> names_;  ///< op_params' gate, up, down
};

class MlpBinder : public FamilyBinder {
 public:
  std::vector<std::string> families() const override { return {"mlp"}; }

  FamilyBinding bind(const Definition& def, const KernelTemplate& kernel) const override {
    require_moe_template(def, kernel);
    const MoeProblem p = read_mlp_problem(def);
    return moe_binding(generate_moe_header(p, def, kernel), p.tokens_axis, p, p.hidden_size,
                       p.top_k, p.hidden.spec->dtype);
  }
};

}  // namespace

MoeProblem read_mlp_problem(const Definition& def) {
  return MlpProblemReader(def).read();
}

std::unique_ptr<FamilyBinder> make_mlp_binder() {
  return std::make_unique<MlpBinder>();
}

}  // namespace kernelarc
