// The moe_backward binder: the routing ([T, K] integer ids and float weights), the hidden states
// and the output gradient ([T, H]; the gradient is the one named grad/dy/dout, else the second),
// the experts' weights as the moe family finds them, and one gradient output per differentiated
// tensor, matched by shape (names where shapes tie). See docs/TEMPLATES.md ("Family:
// moe_backward").
#include "synth/family_moe_backward.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/text.h"
#include "synth/family_moe_reader.h"
#include "synth/family_support.h"

namespace kernelarc {

namespace {

bool names_a_gradient(const TensorSpec& t) {
  const std::string name = to_lower(t.name);
  for (const char* word : {"grad", "dy", "dout", "d_out", "upstream"})
    if (name.find(word) != std::string::npos) return true;
  return false;
}

bool is_integer(DType dtype) {
  return dtype == DType::Int32 || dtype == DType::Int64;
}

class MoeBackwardReader : MoeReaderBase {
 public:
  explicit MoeBackwardReader(const Definition& def) : MoeReaderBase(def, p_) {}

  MoeBackwardProblem read() {
    find_expert_weights();
    find_routing_and_activations();
    assign_expert_weights();
    find_gradients();
    for (const auto& [key, value] : def_.ext.op_params.items())
      if (!read_weight_param(key, value))
        mismatch(def_, "kernelarc.op_params." + key,
                 "unknown field (expected activation, gate_up_order)");
    check_weight_params();
    return p_;
  }

 private:
  /// [T, K] integer ids and their float weights; [T, H] hidden states and output gradient.
  void find_routing_and_activations() {
    std::vector<MoeTensor> matrices;
    for (std::size_t i = 0; i < def_.inputs.size(); ++i) {
      const TensorSpec& t = def_.inputs[i];
      if (t.is_scalar() || t.shape->size() == 3) continue;
      if (t.shape->size() != 2)
        mismatch(def_, "inputs." + t.name,
                 "not an experts' backward input: expected [T, K] expert ids and weights, [T, H] "
                 "hidden states and output gradient, and rank-3 expert weights");
      if (is_integer(t.dtype)) {
        if (p_.topk_ids) mismatch(def_, "inputs." + t.name, "a second integer [T, K] input");
        p_.topk_ids = {&t, static_cast<int>(i)};
      } else {
        matrices.push_back({&t, static_cast<int>(i)});
      }
    }
    if (!p_.topk_ids)
      mismatch(def_, "inputs", "expected the chosen experts' ids, an int32 or int64 [T, K] input");
    p_.tokens_axis = shape(p_.topk_ids)[0];
    p_.top_k = static_value(p_.topk_ids, 1, "experts per token");
    std::vector<MoeTensor> activations;
    for (const MoeTensor& m : matrices) {
      require_float(m);
      if (shape(m)[0] != p_.tokens_axis)
        mismatch(def_, field(m), "expected the tokens axis " + p_.tokens_axis + " first");
      if (shape(m) == shape(p_.topk_ids)) {
        if (p_.topk_weights) mismatch(def_, field(m), "a second float [T, K] input");
        p_.topk_weights = m;
      } else {
        activations.push_back(m);
      }
    }
    if (!p_.topk_weights)
      mismatch(def_, "inputs", "expected the chosen experts' weights, a float [T, K] input");
    if (activations.size() != 2 || shape(activations[0]) != shape(activations[1]))
      mismatch(def_, "inputs",
               "expected two [T, H] inputs: the hidden states and the output's gradient");
    const bool first_is_gradient =
        names_a_gradient(*activations[0].spec) && !names_a_gradient(*activations[1].spec);
    p_.hidden = activations[first_is_gradient ? 1 : 0];
    p_.grad_output = activations[first_is_gradient ? 0 : 1];
    if (p_.grad_output.spec->dtype != p_.hidden.spec->dtype)
      mismatch(def_, field(p_.grad_output) + ".dtype",
               "expected the dtype of " + p_.hidden.spec->name);
    hidden_axis_ = shape(p_.hidden)[1];
    p_.hidden_size = static_value(p_.hidden, 1, "hidden size");
  }

  /// The output of `input`'s shape, its gradient: float32 or the input's dtype.
  MoeTensor gradient_of(const MoeTensor& input, std::vector<MoeTensor>& left, const char* what) {
    std::vector<MoeTensor> same;
    for (const MoeTensor& o : left)
      if (shape(o) == shape(input)) same.push_back(o);
    if (same.empty())
      mismatch(def_, "outputs",
               fmt::format("expected the gradient of {} ({}), an output of shape {}",
                           input.spec->name, what, shape_text(shape(input))));
    // Shapes tie (gate and up apart, or I == H): the output named after the input, else the first.
    MoeTensor chosen = same[0];
    for (const MoeTensor& o : same)
      if (to_lower(o.spec->name).find(to_lower(input.spec->name)) != std::string::npos) chosen = o;
    left.erase(std::find_if(left.begin(), left.end(),
                            [&](const MoeTensor& o) { return o.index == chosen.index; }));
    const DType dtype = chosen.spec->dtype;
    if (dtype != input.spec->dtype && dtype != DType::Float32)
      mismatch(def_, field(chosen, "outputs") + ".dtype",
               "expected float32 or the dtype of " + input.spec->name + ", " +
                   std::string(dtype_name(input.spec->dtype)));
    return chosen;
  }

  void find_gradients() {
    std::vector<MoeTensor> left;
    for (std::size_t i = 0; i < def_.outputs.size(); ++i) {
      if (def_.outputs[i].is_scalar())
        mismatch(def_, "outputs." + def_.outputs[i].name, "expected a gradient tensor");
      left.push_back({&def_.outputs[i], static_cast<int>(i)});
    }
    p_.grad_hidden = gradient_of(p_.hidden, left, "the hidden states");
    if (p_.grad_hidden.spec->dtype != p_.hidden.spec->dtype)
      mismatch(def_, field(p_.grad_hidden, "outputs") + ".dtype",
               "expected the dtype of " + p_.hidden.spec->name);
    // Down first: when I == H its name decides among equal shapes.
    p_.grad_down = gradient_of(p_.w_down, left, "the down projection");
    if (p_.fused_gate_up()) {
      p_.grad_w13 = gradient_of(p_.w13, left, "the gate and up projections");
    } else {
      p_.grad_gate = gradient_of(p_.w_gate, left, "the gate projection");
      p_.grad_up = gradient_of(p_.w_up, left, "the up projection");
    }
    for (const MoeTensor* g : {&p_.grad_w13, &p_.grad_gate, &p_.grad_up})
      if (*g && g->spec->dtype != p_.grad_down.spec->dtype)
        mismatch(def_, field(*g, "outputs") + ".dtype",
                 "expected the dtype of " + p_.grad_down.spec->name);
    for (const MoeTensor& o : left) {
      if (shape(o) == shape(p_.topk_weights) && !p_.grad_topk_weights) {
        p_.grad_topk_weights = o;
        if (o.spec->dtype != p_.topk_weights.spec->dtype && o.spec->dtype != DType::Float32)
          mismatch(def_, field(o, "outputs") + ".dtype",
                   "expected float32 or the dtype of " + p_.topk_weights.spec->name);
        continue;
      }
      mismatch(def_, field(o, "outputs"),
               "not a gradient this family computes (the hidden states', the weights' and the "
               "routing weights')");
    }
  }

  MoeBackwardProblem p_;
};

class MoeBackwardBinder : public FamilyBinder {
 public:
  std::vector<std::string> families() const override { return {"moe_backward"}; }

  FamilyBinding bind(const Definition& def, const KernelTemplate& kernel) const override {
    require_moe_template(def, kernel);
    const MoeBackwardProblem p = read_moe_backward_problem(def);
    return moe_binding(generate_moe_backward_header(p, def, kernel), p.tokens_axis, p,
                       p.hidden_size, p.top_k, p.hidden.spec->dtype);
  }
};

}  // namespace

MoeBackwardProblem read_moe_backward_problem(const Definition& def) {
  return MoeBackwardReader(def).read();
}

std::unique_ptr<FamilyBinder> make_moe_backward_binder() {
  return std::make_unique<MoeBackwardBinder>();
}

}  // namespace kernelarc
