// The mlp binder: a dense gated MLP, down(act(x gate^T) * (x up^T)), the decoder layer's MLP
// block. It is read as a mixture-of-experts layer of one expert that every token takes with
// weight one (no routing), so that the moe family's header and its grouped GEMMs serve it: the
// weights are found by shape as the moe binder finds an expert's, minus the experts axis. See
// docs/TEMPLATES.md ("Family: mlp").
#include <fmt/format.h>

#include "synth/family_moe.h"
#include "synth/family_moe_reader.h"
#include "synth/family_support.h"

namespace kernelarc {

namespace {

constexpr const char* kMlpParams = "gated, activation, gate_up_order";

class MlpProblemReader : MoeReaderBase {
 public:
  explicit MlpProblemReader(const Definition& def) : MoeReaderBase(def, p_, /*dense=*/true) {}

  MoeProblem read() {
    find_expert_weights();
    find_hidden();
    assign_expert_weights();
    p_.output = read_output(p_.hidden);
    read_params();
    p_.top_k = 1;
    return p_;
  }

 private:
  /// Every input that is not a weight: exactly one, the [T, H] hidden states.
  void find_hidden() {
    for (std::size_t i = 0; i < def_.inputs.size(); ++i) {
      const TensorSpec& t = def_.inputs[i];
      if (is_weight(t)) continue;
      if (p_.hidden || t.is_scalar() || t.shape->size() != 2)
        mismatch(def_, "inputs." + t.name,
                 "not an MLP input: expected [T, H] hidden states and [out, in] weights of "
                 "static sizes");
      p_.hidden = {&t, static_cast<int>(i)};
    }
    if (!p_.hidden) mismatch(def_, "inputs", "expected the hidden states, [T, H]");
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
      } else if (!read_weight_param(key, value)) {
        mismatch(def_, field, std::string("unknown field (expected ") + kMlpParams + ")");
      }
    }
    check_weight_params();
  }

  MoeProblem p_;
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
