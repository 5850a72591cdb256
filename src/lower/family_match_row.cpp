// The row-reduction families (rmsnorm, layernorm, softmax, logsumexp, reduce): a reduction over
// the last axis of an element-wise prologue over row inputs and scalars, with per-column weight
// and bias for the norms, and at most one more output holding the prologue value.
#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "lower/family_match_internal.h"

namespace kernelarc {

namespace {

/// A recognised row operation: what the family's kernel computes, read off the graph.
struct RowCore {
  std::string family;
  const Term* prologue = nullptr;  ///< the value reduced, [..., C]
  const Term* eps = nullptr;       ///< norms
  const Term* weight = nullptr;    ///< norms: a per-column Leaf
  const Term* bias = nullptr;      ///< layernorm
  std::string reduction;           ///< reduce: sum, mean, max, min
  std::string refusal;             ///< set when the op is recognised but cannot be served
};

bool is_op(const Term* term, std::string_view op) {
  return term && term->kind == Term::Kind::Op && term->op == op;
}

bool same(const Term* a, const Term* b) {
  return a && b && term_key(*a) == term_key(*b);
}

int64_t rank_of(const OpGraph& graph, const Term& term) {
  return term.value < 0 ? -1 : static_cast<int64_t>(graph.value(term.value).rank());
}

/// Whether `term` reduces the last axis of its argument only.
bool over_last_axis(const OpGraph& graph, const Term& term) {
  return term.dims == std::vector<int64_t>{rank_of(graph, *term.args[0]) - 1};
}

struct Factor {
  const Term* term;
  bool inverted;
};

/// The factors of a product: a * b * c / d -> {a, b, c, 1/d}.
void collect_factors(const Term* term, bool inverted, std::vector<Factor>& factors) {
  if (is_op(term, "mul")) {
    collect_factors(term->args[0].get(), inverted, factors);
    collect_factors(term->args[1].get(), inverted, factors);
  } else if (is_op(term, "div")) {
    collect_factors(term->args[0].get(), inverted, factors);
    collect_factors(term->args[1].get(), !inverted, factors);
  } else if (!(term->kind == Term::Kind::Constant && term->number == 1.0)) {
    factors.push_back({term, inverted});
  }
}

/// The S of rsqrt(S) or 1 / sqrt(S).
const Term* inverse_root(const Factor& factor) {
  if (!factor.inverted && is_op(factor.term, "rsqrt")) return factor.term->args[0].get();
  if (factor.inverted && is_op(factor.term, "sqrt")) return factor.term->args[0].get();
  return nullptr;
}

/// S = statistic + eps (either order): the statistic, with `eps` set.
const Term* split_eps(const Term* sum, const Term** eps, bool (*is_statistic)(const Term*)) {
  if (!is_op(sum, "add")) return nullptr;
  for (int i = 0; i < 2; ++i) {
    const Term* statistic = sum->args[i].get();
    const Term* other = sum->args[1 - i].get();
    if (is_statistic(statistic) &&
        (other->kind == Term::Kind::Constant || other->kind == Term::Kind::Scalar)) {
      *eps = other;
      return statistic;
    }
  }
  return nullptr;
}

bool is_mean(const Term* term) {
  return is_op(term, "mean") && term->keepdim;
}

bool is_variance(const Term* term) {
  return (is_op(term, "var") && term->keepdim) || is_mean(term);
}

bool is_column_leaf(const MatchContext& context, const Term* term) {
  if (!term || term->kind != Term::Kind::Leaf) return false;
  const GraphValue& own = context.graph.value(context.graph.find_input(term->input)->value);
  return own.rank() == 1;
}

/// Describes the factors of a product that a norm cannot take (a second weight, a constant).
std::string describe_extra(const std::vector<Factor>& extra) {
  std::vector<std::string> names;
  for (const Factor& f : extra) {
    std::string name = f.term->kind == Term::Kind::Constant ? fmt::format("{}", f.term->number)
                       : f.term->kind == Term::Kind::Leaf || f.term->kind == Term::Kind::Scalar
                           ? "`" + f.term->input + "`"
                           : "a computed " + f.term->op;
    names.push_back((f.inverted ? "1 / " : "") + name);
  }
  return fmt::format("{}", fmt::join(names, ", "));
}

/// x * rsqrt(mean(x * x, -1, keepdim) + eps) [* weight], in any order and association, with
/// rsqrt(s) also written 1 / sqrt(s).
std::optional<RowCore> rmsnorm_core(const MatchContext& context, const Term* term) {
  std::vector<Factor> factors;
  collect_factors(term, false, factors);
  RowCore core;
  core.family = "rmsnorm";
  auto inverse = factors.end();
  for (auto it = factors.begin(); it != factors.end(); ++it) {
    const Term* root = inverse_root(*it);
    const Term* eps = nullptr;
    const Term* mean = root ? split_eps(root, &eps, is_mean) : nullptr;
    if (!mean || !is_op(mean->args[0].get(), "mul")) continue;
    const Term* square = mean->args[0].get();
    if (!same(square->args[0].get(), square->args[1].get())) continue;
    if (!over_last_axis(context.graph, *mean)) {
      core.refusal = "rmsnorm: the mean of squares runs over another axis than the last";
      return core;
    }
    core.prologue = square->args[0].get();
    core.eps = eps;
    inverse = it;
    break;
  }
  if (inverse == factors.end()) return std::nullopt;
  factors.erase(inverse);
  std::vector<Factor> extra;
  bool have_x = false;
  for (const Factor& f : factors) {
    if (!f.inverted && !have_x && same(f.term, core.prologue)) {
      have_x = true;
    } else if (!f.inverted && !core.weight && is_column_leaf(context, f.term)) {
      core.weight = f.term;
    } else {
      extra.push_back(f);
    }
  }
  if (!have_x) {
    core.refusal = "rmsnorm: the inverse RMS scales another value than the one it was taken of";
  } else if (!extra.empty()) {
    core.refusal = "rmsnorm: the norm is also multiplied by " + describe_extra(extra) +
                   ", which the row family cannot express (it takes one weight)";
  }
  return core;
}

/// (x - mean(x)) * rsqrt(var(x) + eps) [* weight] [+ bias], var unbiased=False or the mean of
/// the squared deviations; or native_layer_norm over the last axis.
std::optional<RowCore> layernorm_core(const MatchContext& context, const Term* term) {
  RowCore core;
  core.family = "layernorm";
  if (is_op(term, "layer_norm")) {
    if (term->dims.size() != 1) {
      core.refusal = fmt::format(
          "layernorm: it normalises the last {} axes; the row family normalises the last one",
          term->dims.size());
      return core;
    }
    core.prologue = term->args[0].get();
    core.weight = term->args[1].get();
    core.bias = term->args[2].get();
    core.eps = term;  // native_layer_norm carries eps as a number (eps_value reads it)
    return core;
  }
  const Term* product = term;
  if (is_op(term, "add")) {
    for (int i = 0; i < 2; ++i) {
      if (is_column_leaf(context, term->args[i].get())) {
        core.bias = term->args[i].get();
        product = term->args[1 - i].get();
        break;
      }
    }
  }
  std::vector<Factor> factors;
  collect_factors(product, false, factors);
  const Term* centred = nullptr;
  const Term* statistic = nullptr;
  for (const Factor& f : factors) {
    if (!f.inverted && is_op(f.term, "sub") && is_mean(f.term->args[1].get()) &&
        same(f.term->args[0].get(), f.term->args[1]->args[0].get()))
      centred = f.term;
    if (const Term* root = inverse_root(f)) statistic = split_eps(root, &core.eps, is_variance);
  }
  if (!centred || !statistic) return std::nullopt;
  core.prologue = centred->args[0].get();
  const bool variance = is_op(statistic, "var") && same(statistic->args[0].get(), core.prologue);
  const Term* squared = statistic->args[0].get();
  const bool squared_deviation = is_op(statistic, "mean") && is_op(squared, "mul") &&
                                 same(squared->args[0].get(), centred) &&
                                 same(squared->args[1].get(), centred);
  if (!variance && !squared_deviation) return std::nullopt;
  if (variance && statistic->number != 0) {
    core.refusal = fmt::format(
        "layernorm: the variance has correction {} (unbiased); a layer norm divides by the row "
        "length (unbiased=False)",
        statistic->number);
    return core;
  }
  if (!over_last_axis(context.graph, *statistic) ||
      !over_last_axis(context.graph, *centred->args[1])) {
    core.refusal = "layernorm: the statistics run over another axis than the last";
    return core;
  }
  std::vector<Factor> extra;
  for (const Factor& f : factors) {
    if (f.term == centred || inverse_root(f)) continue;
    if (!f.inverted && !core.weight && is_column_leaf(context, f.term))
      core.weight = f.term;
    else
      extra.push_back(f);
  }
  if (!extra.empty())
    core.refusal = "layernorm: the norm is also multiplied by " + describe_extra(extra) +
                   ", which the row family cannot express";
  return core;
}

/// softmax(x, -1), or exp(x - amax(x, -1, keepdim)) / sum(that, -1, keepdim).
std::optional<RowCore> softmax_core(const MatchContext& context, const Term* term) {
  RowCore core;
  core.family = "softmax";
  if (is_op(term, "softmax") || is_op(term, "log_softmax")) {
    core.prologue = term->args[0].get();
    if (term->op == "log_softmax")
      core.refusal =
          "log_softmax: no hand-written family writes it (the logsumexp family writes one value "
          "per row)";
    else if (!over_last_axis(context.graph, *term))
      core.refusal = "softmax: it runs over another axis than the last";
    return core;
  }
  if (!is_op(term, "div") || !is_op(term->args[0].get(), "exp")) return std::nullopt;
  const Term* exp = term->args[0].get();
  const Term* total = term->args[1].get();
  if (!is_op(total, "sum") || !total->keepdim || !same(total->args[0].get(), exp))
    return std::nullopt;
  const Term* shifted = exp->args[0].get();
  if (!is_op(shifted, "sub") || !is_op(shifted->args[1].get(), "amax")) return std::nullopt;
  const Term* max = shifted->args[1].get();
  if (!max->keepdim || !same(max->args[0].get(), shifted->args[0].get())) return std::nullopt;
  core.prologue = shifted->args[0].get();
  if (!over_last_axis(context.graph, *total) || !over_last_axis(context.graph, *max))
    core.refusal = "softmax: it runs over another axis than the last";
  return core;
}

/// sum / mean / amax / amin / logsumexp over the last axis, one value per row.
std::optional<RowCore> reduce_core(const MatchContext& context, const Term* term) {
  static const std::map<std::string, std::string, std::less<>> reductions = {
      {"sum", "sum"}, {"mean", "mean"}, {"amax", "max"}, {"amin", "min"}, {"logsumexp", ""}};
  if (term->kind != Term::Kind::Op) return std::nullopt;
  const auto found = reductions.find(term->op);
  if (found == reductions.end()) return std::nullopt;
  RowCore core;
  core.family = found->second.empty() ? "logsumexp" : "reduce";
  core.reduction = found->second;
  core.prologue = term->args[0].get();
  const int64_t rank = rank_of(context.graph, *term->args[0]);
  if (!over_last_axis(context.graph, *term)) {
    core.refusal = fmt::format(
        "{}: the {} runs over axes [{}] of a rank-{} tensor; the row family reduces the last axis "
        "only",
        core.family, term->op, fmt::join(term->dims, ", "), rank);
  } else if (term->keepdim && rank > 1) {
    core.refusal = fmt::format(
        "{}: the {} keeps the reduced axis (keepdim=True); the row family writes one value per "
        "row without it",
        core.family, term->op);
  }
  return core;
}

std::optional<RowCore> find_core(const MatchContext& context, const Term* term) {
  for (const auto recognise : {rmsnorm_core, layernorm_core, softmax_core, reduce_core})
    if (auto core = recognise(context, term)) return core;
  return std::nullopt;
}

/// The first recognised row op inside `term`, outermost first.
const Term* find_inner_core(const MatchContext& context, const Term* term, RowCore* core) {
  for (const TermPtr& arg : term->args) {
    if (!arg) continue;
    if (auto found = find_core(context, arg.get())) {
      *core = *found;
      return arg.get();
    }
    if (const Term* inner = find_inner_core(context, arg.get(), core)) return inner;
  }
  return nullptr;
}

std::string describe_after(const Term& outer, const Term& inner, const std::string& family) {
  std::vector<std::string> others;
  const std::vector<std::string> inside = term_inputs(inner);
  for (const std::string& name : term_inputs(outer))
    if (std::find(inside.begin(), inside.end(), name) == inside.end())
      others.push_back("`" + name + "`");
  static const std::map<std::string, std::string, std::less<>> verbs = {
      {"add", "adds"}, {"sub", "subtracts"}, {"mul", "multiplies by"}, {"div", "divides by"}};
  const auto verb = verbs.find(outer.op);
  const std::string what =
      verb != verbs.end() && !others.empty()
          ? fmt::format("{} {}", verb->second, fmt::join(others, ", "))
          : fmt::format("applies {}{}", outer.kind == Term::Kind::Op ? outer.op : "an op",
                        others.empty() ? "" : fmt::format(" with {}", fmt::join(others, ", ")));
  return fmt::format("{0}: the output {1} after the {0}, which the row family cannot express",
                     family, what);
}

/// Checks the recognised op against the definition and writes its op_params.
class RowMatch {
 public:
  RowMatch(const MatchContext& context, const RowCore& core, std::size_t main_output)
      : context_(context), core_(core), main_(main_output) {}

  FamilyMatch build() {
    if (!core_.refusal.empty()) return no_match(core_.refusal);
    const Term& prologue = *core_.prologue;
    if (prologue.value < 0) return no_match(core_.family + ": the reduced value has no shape");
    row_shape_ = context_.graph.value(prologue.value).shape;
    if (row_shape_.empty()) return no_match(core_.family + ": the reduced value is a scalar");
    const std::string& family = core_.family;
    const TensorSpec& output = *context_.output_spec(context_.outputs[main_].first);

    // Outputs: the result, and at most one more holding the prologue value.
    std::vector<SymSize> expected = row_shape_;
    if (family == "reduce" || family == "logsumexp") expected.pop_back();
    if (!(context_.output_value(main_).shape == expected))
      return fail(fmt::format("the output `{}` has shape {}, expected {}", output.name,
                              shape_string(context_.output_value(main_).shape),
                              shape_string(expected)));
    for (std::size_t i = 0; i < context_.outputs.size(); ++i) {
      if (i == main_) continue;
      const auto& [name, term] = context_.outputs[i];
      if (family == "reduce" || prologue_output_ || !same(term.get(), &prologue))
        return fail(
            fmt::format("the graph also returns `{}`, which the row family does not write", name));
      prologue_output_ = name;
    }
    if (!is_family_float(output.dtype))
      return fail(fmt::format("the output `{}` is {}, not float32, float16 or bfloat16",
                              output.name, dtype_name(output.dtype)));

    const auto prologue_text = expression_text(
        prologue, [&](const Term& t, std::string* why) { return prologue_variable(t, why); },
        &why_);
    if (!prologue_text) return fail(why_);
    if (auto refusal = check_vectors(); !refusal.empty()) return fail(refusal);
    if (auto refusal = check_inputs(); !refusal.empty()) return fail(refusal);

    FamilyMatch match;
    match.ok = true;
    match.family = family;
    match.op_params = OrderedJson::object();
    if (family == "reduce") {
      match.op_params["op"] = core_.reduction;
      match.op_params["dim"] = -1;
    }
    if (family == "rmsnorm" || family == "layernorm") {
      const auto eps = eps_value();
      if (!eps) return fail(why_);
      match.op_params["eps"] = *eps;
    }
    const bool single_input = prologue.kind == Term::Kind::Leaf && row_inputs_ == 1;
    if (!single_input) match.op_params["prologue"] = *prologue_text;
    if (prologue_output_) match.op_params["prologue_output"] = *prologue_output_;
    match.summary = fmt::format("{}{} of {} over the last axis of {}", family,
                                core_.reduction.empty() ? "" : " (" + core_.reduction + ")",
                                *prologue_text, shape_string(row_shape_));
    if (core_.weight) match.summary += ", weight " + core_.weight->input;
    if (core_.bias) match.summary += ", bias " + core_.bias->input;
    if (prologue_output_) match.summary += ", the prologue also written to " + *prologue_output_;
    return match;
  }

 private:
  FamilyMatch fail(const std::string& why) const { return no_match(core_.family + ": " + why); }

  std::optional<double> eps_value() {
    if (core_.family == "layernorm" && is_op(core_.eps, "layer_norm")) return core_.eps->number;
    if (core_.eps && core_.eps->kind == Term::Kind::Constant && core_.eps->number >= 0)
      return core_.eps->number;
    if (core_.eps && core_.eps->kind == Term::Kind::Scalar)
      why_ = fmt::format(
          "eps is the scalar input `{}`, but the row family needs eps as a number in op_params",
          core_.eps->input);
    else
      why_ = "eps is not a number >= 0";
    return std::nullopt;
  }

  /// The prologue reads row inputs of the row shape (row-major, whole) and scalars.
  std::optional<std::string> prologue_variable(const Term& term, std::string* why) {
    if (term.kind == Term::Kind::Scalar) return term.input;
    if (term.kind != Term::Kind::Leaf) {
      *why = fmt::format("the reduced value needs {}, which an element-wise prologue cannot say",
                         term.kind == Term::Kind::Opaque ? term.op : "a " + term.op);
      return std::nullopt;
    }
    const auto access = classify_leaf(context_.graph, term, row_shape_, why);
    if (!access) return std::nullopt;
    if (access->kind == LeafAccess::Kind::Scalar0D) return term.input;
    const GraphValue& own = context_.graph.value(context_.graph.find_input(term.input)->value);
    if (access->kind != LeafAccess::Kind::Row || !access->column_offset.is_zero() ||
        !(own.shape == row_shape_)) {
      *why = fmt::format(
          "the reduced value reads `{}` {} as {}; the prologue reads whole row "
          "inputs of shape {} and scalars",
          term.input, shape_string(own.shape),
          access->kind == LeafAccess::Kind::Column ? "a per-column vector" : "a slice of its rows",
          shape_string(row_shape_));
      return std::nullopt;
    }
    if (std::find(row_names_.begin(), row_names_.end(), term.input) == row_names_.end()) {
      row_names_.push_back(term.input);
      ++row_inputs_;
    }
    return term.input;
  }

  std::string check_vectors() {
    const bool norm = core_.family == "rmsnorm" || core_.family == "layernorm";
    for (const Term* vector : {core_.weight, core_.bias}) {
      if (!vector) continue;
      if (!norm) return "a per-column input outside a norm";
      if (vector->kind != Term::Kind::Leaf)
        return "the norm's weight or bias is a computed value, not an input";
      std::string why;
      const auto access = classify_leaf(context_.graph, *vector, row_shape_, &why);
      if (!access || access->kind != LeafAccess::Kind::Column || !access->column_offset.is_zero() ||
          !(access->width == row_shape_.back()))
        return why.empty() ? fmt::format("`{}` is not read as a whole per-column vector [{}]",
                                         vector->input, row_shape_.back().text())
                           : why;
    }
    return "";
  }

  /// Mirrors how the row binder sorts the definition's inputs, so that it sees the same roles.
  std::string check_inputs() {
    const Definition& def = context_.definition;
    const TensorSpec* widest = nullptr;
    for (const TensorSpec& input : def.inputs)
      if (!input.is_scalar() && (!widest || input.shape->size() > widest->shape->size()))
        widest = &input;
    std::vector<std::string> vectors;
    for (const TensorSpec& input : def.inputs) {
      if (input.is_scalar() || input.shape->empty()) continue;
      const bool row =
          *input.shape == *widest->shape &&
          !(widest->shape->size() == 1 && (input.name == "weight" || input.name == "bias"));
      const bool vector = input.shape->size() == 1 && input.shape->back() == widest->shape->back();
      if (!is_family_float(input.dtype))
        return fmt::format("input `{}` is {}, not float32, float16 or bfloat16", input.name,
                           dtype_name(input.dtype));
      if (row) continue;
      if (!vector)
        return fmt::format(
            "input `{}` has shape {}: neither rows like `{}` nor a per-column "
            "vector",
            input.name, fmt::join(*input.shape, ", "), widest->name);
      vectors.push_back(input.name);
    }
    for (const std::string& name : row_names_)
      if (*context_.input_spec(name)->shape != *widest->shape)
        return fmt::format(
            "the reduced value reads `{}`, but the row family takes the rows of "
            "the widest input `{}`",
            name, widest->name);
    // The binder takes weight then bias by name, else in definition order.
    std::vector<std::string> used;
    if (core_.weight) used.push_back(core_.weight->input);
    if (core_.bias) used.push_back(core_.bias->input);
    if (core_.family == "rmsnorm" && core_.weight && core_.weight->input == "bias")
      return "the weight is the input named `bias`, which the row binder refuses for an rmsnorm";
    if (vectors != used) {
      const bool by_name =
          core_.family == "layernorm" && (!core_.weight || core_.weight->input == "weight") &&
          (!core_.bias || core_.bias->input == "bias") && vectors.size() == used.size();
      if (!by_name)
        return fmt::format("the per-column inputs are [{}] but the norm uses [{}] as weight{}",
                           fmt::join(vectors, ", "), fmt::join(used, ", "),
                           core_.bias ? " and bias" : "");
    }
    return "";
  }

  const MatchContext& context_;
  const RowCore& core_;
  std::size_t main_;
  std::vector<SymSize> row_shape_;
  std::optional<std::string> prologue_output_;
  std::vector<std::string> row_names_;
  int row_inputs_ = 0;
  std::string why_;
};

}  // namespace

std::optional<FamilyMatch> match_row_family(MatchContext& context) {
  std::optional<FamilyMatch> refusal;
  for (std::size_t i = 0; i < context.outputs.size(); ++i) {
    const Term* term = context.outputs[i].second.get();
    if (auto core = find_core(context, term)) {
      FamilyMatch match = RowMatch(context, *core, i).build();
      if (match.ok) return match;
      if (!refusal) refusal = match;
      continue;
    }
    RowCore inner;
    if (const Term* found = find_inner_core(context, term, &inner); found && !refusal)
      refusal = no_match(describe_after(*term, *found, inner.family));
  }
  return refusal;
}

}  // namespace kernelarc
