// The mlp family from a traced graph: down(act(x gate^T) * (x up^T)), the gated MLP of a
// decoder layer. The graph says which weight sits under the activation, so the match names the
// gate, up and down inputs in op_params and the binder need not guess them from their names.
#include <fmt/format.h>

#include "lower/family_match_internal.h"

namespace kernelarc {

namespace {

bool is_op(const Term& term, const char* op) {
  return term.kind == Term::Kind::Op && term.op == op;
}

bool is_activation(const Term& term) {
  return is_op(term, "silu") || is_op(term, "gelu") || is_op(term, "gelu_tanh");
}

/// x W^T with W a weight input read transposed (nn.Linear); the weight's name.
std::optional<std::string> weight_of(const OpGraph& graph, const Term& product, std::string* why) {
  const auto weight = matrix_read(graph, *product.args[1], why);
  if (!weight) return std::nullopt;
  if (weight->as_stored) {
    *why = fmt::format("`{}` is read as stored; an MLP's weights are [out, in] (x W^T)",
                       weight->input);
    return std::nullopt;
  }
  return weight->input;
}

}  // namespace

std::optional<FamilyMatch> match_mlp_family(MatchContext& context) {
  if (context.outputs.size() != 1) return std::nullopt;
  const Term& out = *context.outputs[0].second;
  std::vector<const Term*> products;
  collect_ops(out, "mm", products);
  // The output is the down product of a product of two terms, one of them activated.
  if (!is_op(out, "mm") || products.size() != 3) return std::nullopt;
  const Term& hidden = *out.args[0];
  if (!is_op(hidden, "mul")) return std::nullopt;
  const Term* gate_act = is_activation(*hidden.args[0]) ? hidden.args[0].get() : nullptr;
  const Term* up = hidden.args[1].get();
  if (!gate_act && is_activation(*hidden.args[1])) {
    gate_act = hidden.args[1].get();
    up = hidden.args[0].get();
  }
  if (!gate_act || !is_op(*gate_act->args[0], "mm") || !is_op(*up, "mm")) return std::nullopt;
  const Term& gate = *gate_act->args[0];

  const auto fail = [](const std::string& why) { return no_match("mlp: " + why); };
  std::string why;
  const auto x_gate = matrix_read(context.graph, *gate.args[0], &why);
  const auto x_up = x_gate ? matrix_read(context.graph, *up->args[0], &why) : std::nullopt;
  if (!x_gate || !x_up) return fail(why);
  if (x_gate->input != x_up->input || !x_gate->as_stored || !x_up->as_stored)
    return fail("the gate and up products do not both read one input's rows");
  const auto gate_w = weight_of(context.graph, gate, &why);
  const auto up_w = gate_w ? weight_of(context.graph, *up, &why) : std::nullopt;
  const auto down_w = up_w ? weight_of(context.graph, out, &why) : std::nullopt;
  if (!down_w) return fail(why);
  if (*gate_w == *up_w || *gate_w == *down_w || *up_w == *down_w)
    return fail("the three products must read three different weights");
  if (context.definition.inputs.size() != 4)
    return fail(
        fmt::format("the definition has {} inputs; a gated MLP reads four (x, gate, up, "
                    "down)",
                    context.definition.inputs.size()));
  FamilyMatch match;
  match.ok = true;
  match.family = "mlp";
  match.op_params = {
      {"activation", gate_act->op}, {"gate", *gate_w}, {"up", *up_w}, {"down", *down_w}};
  match.summary = fmt::format("gated MLP: {}({} {}^T) * ({} {}^T), then {}^T", gate_act->op,
                              x_gate->input, *gate_w, x_gate->input, *up_w, *down_w);
  return match;
}

}  // namespace kernelarc
