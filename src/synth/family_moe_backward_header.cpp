// ka_problem.h for the moe_backward family: sizes as macros, KaArgs with the routing, the rows of
// the hidden states, of the output's gradient, of the experts' weights and of every gradient
// (fused or separate gate and up written out), the activation and its derivative, and ka_bind.
#include <fmt/format.h>

#include "synth/family_moe_backward.h"
#include "synth/family_moe_reader.h"
#include "synth/family_support.h"

namespace kernelarc {

namespace {

class MoeBackwardHeaderWriter {
 public:
  MoeBackwardHeaderWriter(const MoeBackwardProblem& p, const Definition& def,
                          const KernelTemplate& kernel)
      : p_(p), def_(def), kernel_(kernel), cuda_(kernel.target == DeviceKind::Cuda) {}

  std::string write() {
    out_ = moe_header_start("moe_backward", def_, kernel_);
    write_macros();
    write_args();
    write_bind();
    return out_;
  }

 private:
  std::string type(DType dtype) const { return header_element_type(dtype, cuda_); }

  void write_macros() {
    out_ += fmt::format(
        "\n#define KA_EXPERTS {}\n#define KA_HIDDEN {}\n#define KA_INTER {}\n#define KA_TOP_K {}\n"
        "#define KA_HAS_GRAD_ROUTING {}\n",
        p_.experts, p_.hidden_size, p_.inter, p_.top_k, p_.grad_topk_weights ? 1 : 0);
    out_ += fmt::format(
        "typedef {} ka_act_t;\ntypedef {} ka_w_t;\ntypedef {} ka_wgrad_t;\ntypedef {} ka_id_t;\n"
        "typedef {} ka_route_t;\n",
        type(p_.hidden.spec->dtype), type(p_.w_down.spec->dtype), type(p_.grad_down.spec->dtype),
        p_.topk_ids.spec->dtype == DType::Int64 ? "long long" : "int",
        type(p_.topk_weights.spec->dtype));
    if (p_.grad_topk_weights)
      out_ += fmt::format("typedef {} ka_route_grad_t;\n", type(p_.grad_topk_weights.spec->dtype));
  }

  void write_args() {
    out_ +=
        "\n// The problem's tensors; the accessors hide how the weights are stored.\n"
        "struct KaArgs {\n"
        "  const ka_act_t* x;\n  const ka_act_t* dy;\n  const ka_id_t* ids;\n"
        "  const ka_route_t* route;\n  const ka_w_t* gate_;\n";
    if (!p_.fused_gate_up()) out_ += "  const ka_w_t* up_;\n";
    out_ += "  const ka_w_t* down_;\n  ka_act_t* dx;\n  ka_wgrad_t* dgate_;\n";
    if (!p_.fused_gate_up()) out_ += "  ka_wgrad_t* dup_;\n";
    out_ += "  ka_wgrad_t* ddown_;\n";
    if (p_.grad_topk_weights) out_ += "  ka_route_grad_t* droute;\n";
    out_ += "  long long tokens_;\n\n";
    out_ +=
        "  KA_HD long long tokens() const { return tokens_; }\n"
        "  KA_HD const ka_act_t* x_row(long long t) const { return x + t * KA_HIDDEN; }\n"
        "  // The gradient of the layer's output.\n"
        "  KA_HD const ka_act_t* dy_row(long long t) const { return dy + t * KA_HIDDEN; }\n"
        "  // Token t's k-th expert (outside [0, KA_EXPERTS): no expert) and its weight.\n"
        "  KA_HD long long expert(long long t, int k) const { return ids[t * KA_TOP_K + k]; }\n"
        "  KA_HD float route_weight(long long t, int k) const {\n"
        "    return ka_to_float(route[t * KA_TOP_K + k]);\n  }\n"
        "  KA_HD ka_act_t* dx_row(long long t) const { return dx + t * KA_HIDDEN; }\n";
    out_ += fmt::format(
        "  // KA_INTER rows of KA_HIDDEN elements: the weights and their gradients.\n"
        "  KA_HD const ka_w_t* gate_rows(int e) const {{ return {}; }}\n"
        "  KA_HD const ka_w_t* up_rows(int e) const {{ return {}; }}\n"
        "  KA_HD ka_wgrad_t* dgate_rows(int e) const {{ return {}; }}\n"
        "  KA_HD ka_wgrad_t* dup_rows(int e) const {{ return {}; }}\n"
        "  // KA_HIDDEN rows of KA_INTER elements.\n"
        "  KA_HD const ka_w_t* down_rows(int e) const {{\n"
        "    return down_ + static_cast<long long>(e) * KA_HIDDEN * KA_INTER;\n  }}\n"
        "  KA_HD ka_wgrad_t* ddown_rows(int e) const {{\n"
        "    return ddown_ + static_cast<long long>(e) * KA_HIDDEN * KA_INTER;\n  }}\n",
        moe_gate_up_rows(p_, false, "gate_", "up_"), moe_gate_up_rows(p_, true, "gate_", "up_"),
        moe_gate_up_rows(p_, false, "dgate_", "dup_"),
        moe_gate_up_rows(p_, true, "dgate_", "dup_"));
    out_ += p_.grad_topk_weights
                ? "  // The gradient of token t's k-th routing weight.\n"
                  "  KA_HD void set_route_grad(long long t, int k, float g) const {\n"
                  "    droute[t * KA_TOP_K + k] = ka_from_float<ka_route_grad_t>(g);\n  }\n"
                : "  KA_HD void set_route_grad(long long, int, float) const {}\n";
    out_ += "};\n";
    out_ += moe_activation_functions(p_.activation);
  }

  std::string data(const MoeTensor& t, bool output = false) const {
    return fmt::format("{}[{}].data", output ? "outputs" : "inputs", t.index);
  }

  void write_bind() {
    std::string body = bind_every_tensor_check(def_);
    body += bind_axis_locals(def_);
    body += bind_every_shape_check(def_);
    if (cuda_) {
      // The CUDA templates copy rows in 16-byte units.
      for (const MoeTensor* t :
           {&p_.hidden, &p_.grad_output, &p_.w13, &p_.w_gate, &p_.w_up, &p_.w_down})
        if (*t) body += moe_aligned_check(data(*t), t->spec->name);
      for (const MoeTensor* t :
           {&p_.grad_hidden, &p_.grad_w13, &p_.grad_gate, &p_.grad_up, &p_.grad_down})
        if (*t) body += moe_aligned_check(data(*t, true), t->spec->name);
    }
    const auto assign = [&](const char* member, const char* type_name, const MoeTensor& t,
                            bool output) {
      body += fmt::format("  args->{} = static_cast<{}{}*>({});\n", member, output ? "" : "const ",
                          type_name, data(t, output));
    };
    assign("x", "ka_act_t", p_.hidden, false);
    assign("dy", "ka_act_t", p_.grad_output, false);
    assign("ids", "ka_id_t", p_.topk_ids, false);
    assign("route", "ka_route_t", p_.topk_weights, false);
    assign("gate_", "ka_w_t", p_.fused_gate_up() ? p_.w13 : p_.w_gate, false);
    if (!p_.fused_gate_up()) assign("up_", "ka_w_t", p_.w_up, false);
    assign("down_", "ka_w_t", p_.w_down, false);
    assign("dx", "ka_act_t", p_.grad_hidden, true);
    assign("dgate_", "ka_wgrad_t", p_.fused_gate_up() ? p_.grad_w13 : p_.grad_gate, true);
    if (!p_.fused_gate_up()) assign("dup_", "ka_wgrad_t", p_.grad_up, true);
    assign("ddown_", "ka_wgrad_t", p_.grad_down, true);
    if (p_.grad_topk_weights) assign("droute", "ka_route_grad_t", p_.grad_topk_weights, true);
    body += fmt::format("  args->tokens_ = ka_axis_{};\n  return nullptr;\n", p_.tokens_axis);
    out_ += ka_bind_definition(body, "fills *args; nullptr or what is wrong");
  }

  const MoeBackwardProblem& p_;
  const Definition& def_;
  const KernelTemplate& kernel_;
  const bool cuda_;
  std::string out_;
};

}  // namespace

std::string generate_moe_backward_header(const MoeBackwardProblem& problem, const Definition& def,
                                         const KernelTemplate& kernel) {
  return MoeBackwardHeaderWriter(problem, def, kernel).write();
}

}  // namespace kernelarc
