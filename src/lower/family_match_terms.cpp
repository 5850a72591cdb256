#include "lower/family_match_terms.h"

#include <cmath>
#include <set>

#include <fmt/format.h>

#include "lower/lowering.h"

namespace kernelarc {

namespace {

// ATen ops that compute one function of one tensor, by their name in the expression language.
const std::map<std::string, std::string, std::less<>>& unary_functions() {
  static const std::map<std::string, std::string, std::less<>> functions = {
      {"neg", "neg"},     {"relu", "relu"}, {"silu", "silu"},   {"sigmoid", "sigmoid"},
      {"tanh", "tanh"},   {"exp", "exp"},   {"log", "log"},     {"log1p", "log1p"},
      {"expm1", "expm1"}, {"sqrt", "sqrt"}, {"rsqrt", "rsqrt"}, {"abs", "abs"}};
  return functions;
}

bool is_float(const std::optional<DType>& dtype) {
  return dtype && dtype_is_floating(*dtype);
}

bool same_layout(const GraphValue& a, const GraphValue& b) {
  return a.shape == b.shape && a.stride == b.stride && a.offset == b.offset;
}

/// Whether `value` is row-major contiguous (extents of 1 may have any stride).
bool is_contiguous(const GraphValue& value) {
  return lowering::is_contiguous(value.stride, value.shape);
}

std::string number_key(double number) {
  return fmt::format("{}", number);
}

/// A constant number argument, `fallback` when it is absent; nullopt when it is not a constant.
std::optional<double> number_arg(const GraphNode& node, std::size_t position, std::string_view kw,
                                 double fallback) {
  const GraphArg* given = node.arg(position, kw);
  if (given == nullptr || given->is_none()) return fallback;
  return given->as_float();
}

}  // namespace

TermPtr make_op(std::string op, std::vector<TermPtr> args, int64_t value) {
  auto term = std::make_shared<Term>();
  term->kind = Term::Kind::Op;
  term->op = std::move(op);
  term->args = std::move(args);
  term->value = value;
  return term;
}

TermPtr make_constant(double number) {
  auto term = std::make_shared<Term>();
  term->kind = Term::Kind::Constant;
  term->number = number;
  return term;
}

TermPtr make_opaque(std::string what, int64_t value) {
  auto term = std::make_shared<Term>();
  term->kind = Term::Kind::Opaque;
  term->op = std::move(what);
  term->value = value;
  return term;
}

TermPtr TermBuilder::term(int64_t value_id) {
  if (const auto found = built_.find(value_id); found != built_.end()) return found->second;
  TermPtr result = build(value_id);
  built_[value_id] = result;
  return result;
}

TermPtr TermBuilder::build(int64_t value_id) {
  const GraphNode* node = graph_.producer(value_id);
  if (!node) {
    if (const GraphInput* input = graph_.input_of_value(value_id)) {
      auto leaf = std::make_shared<Term>();
      leaf->kind = Term::Kind::Leaf;
      leaf->input = input->name;
      leaf->access = value_id;
      leaf->value = value_id;
      return leaf;
    }
    const GraphBuffer& buffer = graph_.buffer_of(value_id);
    if (buffer.source == GraphBuffer::Source::Constant && buffer.data.size() == 1)
      return make_constant(buffer.data.front());
    return make_opaque("a constant tensor", value_id);
  }
  std::size_t index = 0;
  while (index < node->outputs.size() && node->outputs[index] != value_id) ++index;
  return build_node(*node, value_id, index);
}

TermPtr TermBuilder::arg_term(const GraphNode& node, std::size_t position, std::string_view name) {
  const GraphArg* arg = node.arg(position, name);
  if (!arg) return nullptr;
  if (const auto value = arg->as_value()) return term(*value);
  if (const auto number = arg->as_float()) return make_constant(*number);
  if (arg->kind == GraphArg::Kind::Input) {
    auto scalar = std::make_shared<Term>();
    scalar->kind = Term::Kind::Scalar;
    scalar->input = arg->text;
    return scalar;
  }
  return make_opaque(fmt::format("argument {} of {}", position, node.op));
}

TermPtr TermBuilder::view_of(const GraphNode& node, int64_t value_id) {
  const auto source = node.args.empty() ? std::nullopt : node.args.front().as_value();
  if (!source) return make_opaque(node.op, value_id);
  const TermPtr base = term(*source);
  const GraphValue& out = graph_.value(value_id);
  if (base->kind == Term::Kind::Leaf) {
    // A view of the input's buffer, or of a cast that kept the whole input's layout, reads the
    // input itself through the view's strides and offset.
    if (*source != base->access && *source != base->value)
      return make_opaque(fmt::format("a view ({}) of a cast of a view of {}", node.op, base->input),
                         value_id);
    auto leaf = std::make_shared<Term>(*base);
    leaf->access = value_id;
    leaf->value = value_id;
    return leaf;
  }
  if (base->kind == Term::Kind::Constant || base->kind == Term::Kind::Scalar) return base;
  // A computed value may be reshaped (the element order kept) or broadcast; any other view
  // (transpose, slice) changes which element is which.
  const GraphValue& in = graph_.value(*source);
  const bool reshape =
      is_contiguous(in) && is_contiguous(out) && in.offset.is_zero() && out.offset.is_zero();
  const bool expand = node.base_name() == "expand" || node.base_name() == "expand_as";
  if (!reshape && !expand)
    return make_opaque(fmt::format("a {} view of a computed value", node.op), value_id);
  auto copy = std::make_shared<Term>(*base);
  copy->value = value_id;
  return copy;
}

TermPtr TermBuilder::cast_of(const GraphNode& node, int64_t value_id) {
  const auto source = node.args.empty() ? std::nullopt : node.args.front().as_value();
  if (!source) return make_opaque(node.op, value_id);
  const GraphValue& from = graph_.value(*source);
  const GraphValue& to = graph_.value(value_id);
  if (from.dtype == DType::Bool && is_float(to.dtype)) {
    // A comparison read as a number (`(x > 0).float()`): the writer spells it where(c, 1, 0).
    const TermPtr base = term(*source);
    if (base->kind == Term::Kind::Op && is_comparison_op(base->op)) return base;
  }
  if (!is_float(from.dtype) || !is_float(to.dtype))
    return make_opaque(fmt::format("a cast from {} to {}", from.dtype_name, to.dtype_name),
                       value_id);
  const TermPtr base = term(*source);
  if (base->kind != Term::Kind::Leaf) return base;
  // A cast of an input keeps reading the input; a later view of the cast addresses the input's
  // buffer alike only when the cast kept the input's own layout.
  auto leaf = std::make_shared<Term>(*base);
  leaf->value = same_layout(from, to) && base->access == graph_.find_input(base->input)->value
                    ? value_id
                    : base->access;
  return leaf;
}

TermPtr TermBuilder::reduction(const GraphNode& node, int64_t value_id, const std::string& op) {
  TermPtr arg = arg_term(node, 0, "self");
  if (!arg || arg->value < 0) return make_opaque(node.op, value_id);
  const auto rank = static_cast<int64_t>(graph_.value(arg->value).rank());
  std::vector<int64_t> dims;
  const GraphArg* dim_arg = node.arg(1, "dim");
  if (dim_arg && !dim_arg->is_none()) {
    const auto list = dim_arg->as_int_list();
    if (!list) return make_opaque(node.op + " over symbolic axes", value_id);
    dims = *list;
  }
  if (dims.empty())  // sum(x) / mean(x): every axis
    for (int64_t d = 0; d < rank; ++d) dims.push_back(d);
  std::set<int64_t> normalised;
  for (int64_t dim : dims) normalised.insert(dim < 0 ? dim + rank : dim);
  auto term = std::make_shared<Term>();
  term->kind = Term::Kind::Op;
  term->op = op;
  term->args = {arg};
  term->value = value_id;
  term->dims.assign(normalised.begin(), normalised.end());
  const GraphArg* keepdim = node.arg(2, "keepdim");
  term->keepdim = keepdim && keepdim->as_bool().value_or(false);
  if (op == "var") {
    const GraphArg* correction = node.kwarg("correction");
    const GraphArg* unbiased = node.base_name() == "var" && node.overload() == "dim"
                                   ? node.arg(2, "unbiased")
                                   : node.kwarg("unbiased");
    if (node.overload() == "dim")
      term->keepdim = node.arg(3, "keepdim") && node.arg(3, "keepdim")->as_bool().value_or(false);
    term->number = correction && !correction->is_none() ? correction->as_float().value_or(1)
                   : unbiased ? (unbiased->as_bool().value_or(true) ? 1 : 0)
                              : 1;
  }
  return term;
}

// PyTorch computes these activations as a select between two formulas (x > 0 ? x : slope * x);
// written with max, min and exp they give the same values: the two sides meet where the select
// switches, and the side not taken is never the extreme (for slope <= 1, slope * x <= x exactly
// where x >= 0). Softplus, mish, threshold and hardshrink switch where their sides do not meet
// (or one overflows), so they stay selects: torch's own condition, in a where. nullptr when
// `name` is none of them; an opaque term when one has an argument that is not a constant, or a
// constant the rewriting does not hold for.
TermPtr TermBuilder::piecewise_activation(const GraphNode& node, const std::string& name,
                                          int64_t value_id) {
  const auto x = [&] { return arg_term(node, 0, "self"); };
  const auto clamp = [](TermPtr value, double low, double high) {
    return make_op("min",
                   {make_op("max", {std::move(value), make_constant(low)}), make_constant(high)});
  };
  const auto named = [value_id](TermPtr term) {
    auto copy = std::make_shared<Term>(*term);
    copy->value = value_id;
    return copy;
  };
  const auto opaque = [&](const std::string& why) {
    return make_opaque(fmt::format("{} {}", node.op, why), value_id);
  };
  if (name == "leaky_relu") {
    const auto slope = number_arg(node, 1, "negative_slope", 0.01);
    if (!slope) return opaque("with a non-constant slope");
    if (*slope == 0) return make_op("relu", {x()}, value_id);
    // Above 1 the scaled side is the larger one for x > 0, and min picks x there.
    return make_op(*slope <= 1 ? "max" : "min", {x(), make_op("mul", {make_constant(*slope), x()})},
                   value_id);
  }
  if (name == "hardtanh") {
    const auto low = number_arg(node, 1, "min_val", -1), high = number_arg(node, 2, "max_val", 1);
    if (!low || !high || *low > *high) return opaque("with non-constant or inverted bounds");
    return named(clamp(x(), *low, *high));
  }
  if (name == "relu6") return named(clamp(x(), 0, 6));
  if (name == "hardsigmoid" || name == "hardswish") {
    TermPtr gate =
        make_op("div", {clamp(make_op("add", {x(), make_constant(3)}), 0, 6), make_constant(6)});
    return named(name == "hardsigmoid" ? gate : make_op("mul", {x(), gate}));
  }
  if (name == "elu" || name == "selu" || name == "celu") {
    // elu = scale * (x > 0 ? x : alpha * (exp(input_scale * x) - 1)); for alpha >= 0 the
    // negative side is max(x, 0) + min(alpha * (exp(input_scale * x) - 1), 0), whose second
    // term is 0 wherever x >= 0 (exp >= 1 there, inf included).
    double scale = 1, input_scale = 1;
    std::optional<double> alpha = 1;
    if (name == "elu") {
      alpha = number_arg(node, 1, "alpha", 1);
      const auto s = number_arg(node, 2, "scale", 1), i = number_arg(node, 3, "input_scale", 1);
      if (!s || !i) return opaque("with a non-constant scale");
      scale = *s, input_scale = *i;
    } else if (name == "selu") {
      alpha = 1.6732632423543772, scale = 1.0507009873554805;
    } else {
      alpha = number_arg(node, 1, "alpha", 1);
      if (alpha && *alpha != 0) input_scale = 1 / *alpha;
    }
    if (!alpha || *alpha < 0 || input_scale <= 0)
      return opaque("with a negative or non-constant alpha");
    TermPtr inner = x();
    if (input_scale != 1) inner = make_op("mul", {make_constant(input_scale), inner});
    TermPtr negative = make_op(
        "mul",
        {make_constant(*alpha), make_op("sub", {make_op("exp", {inner}), make_constant(1)})});
    TermPtr value =
        make_op("add", {make_op("relu", {x()}), make_op("min", {negative, make_constant(0)})});
    if (scale != 1) value = make_op("mul", {make_constant(scale), value});
    return named(value);
  }
  if (name == "softplus" || name == "mish") {
    // softplus = x * beta > threshold ? x : log1p(exp(x * beta)) / beta; at x = 100 the formula
    // is inf and the select gives 100. mish = x * tanh(softplus(x)): torch's mish kernel has no
    // threshold, yet the values agree, since above 20 log1p(exp(x)) rounds to x in float32 and
    // tanh of either to 1.
    const bool mish = name == "mish";
    const auto beta = mish ? 1.0 : number_arg(node, 1, "beta", 1);
    const auto threshold = mish ? 20.0 : number_arg(node, 2, "threshold", 20);
    if (!beta || !threshold) return opaque("with a non-constant beta or threshold");
    TermPtr scaled = *beta == 1 ? x() : make_op("mul", {x(), make_constant(*beta)});
    TermPtr smooth = make_op("log1p", {make_op("exp", {scaled})});
    if (*beta != 1) smooth = make_op("div", {smooth, make_constant(*beta)});
    TermPtr softplus =
        make_op("where", {make_op("gt", {scaled, make_constant(*threshold)}), x(), smooth});
    return named(mish ? make_op("mul", {x(), make_op("tanh", {softplus})}) : softplus);
  }
  if (name == "threshold") {  // x <= threshold ? value : x, so NaN stays
    return make_op(
        "where",
        {make_op("le", {x(), arg_term(node, 1, "threshold")}), arg_term(node, 2, "value"), x()},
        value_id);
  }
  if (name == "hardshrink") {  // -lambd <= x <= lambd ? 0 : x, so NaN stays
    const auto lambd = number_arg(node, 1, "lambd", 0.5);
    if (!lambd) return opaque("with a non-constant lambda");
    TermPtr inside =
        make_op("where", {make_op("le", {x(), make_constant(*lambd)}), make_constant(0), x()});
    return make_op("where", {make_op("ge", {x(), make_constant(-*lambd)}), inside, x()}, value_id);
  }
  return nullptr;
}

TermPtr TermBuilder::build_node(const GraphNode& node, int64_t value_id, std::size_t output_index) {
  if (node.view) return view_of(node, value_id);
  std::string name(node.base_name());
  if (name.size() > 1 && name.back() == '_') name.pop_back();  // in-place forms (add_)
  static const std::set<std::string, std::less<>> casts = {"_to_copy", "to", "clone", "contiguous",
                                                           "type_as"};
  if (casts.count(name)) return cast_of(node, value_id);
  // Arithmetic on booleans is logic (True + True is True), which the float expressions lack: a
  // boolean reaches a family only as a comparison (where()'s condition, or read as 1 and 0).
  if (graph_.value(value_id).dtype == DType::Bool && !is_comparison_op(name))
    return make_opaque(node.op + " on booleans", value_id);

  const auto arg = [&](std::size_t position, std::string_view kw = {}) {
    return arg_term(node, position, kw);
  };
  const auto scaled = [&](TermPtr term, const char* kw) -> TermPtr {
    const GraphArg* alpha = node.kwarg(kw);
    if (!alpha) alpha = node.arg(2, kw);
    const auto factor = alpha ? alpha->as_float() : std::optional<double>(1.0);
    if (!factor) return make_opaque(fmt::format("{} with a non-constant {}", node.op, kw));
    if (*factor == 1.0) return term;
    return make_op("mul", {make_constant(*factor), term});
  };
  if (const auto found = unary_functions().find(name); found != unary_functions().end())
    return make_op(found->second, {arg(0)}, value_id);
  if (name == "gelu") {
    const GraphArg* approximate = node.arg(1, "approximate");
    const std::string form = approximate ? approximate->as_string().value_or("none") : "none";
    return make_op(form == "tanh" ? "gelu_tanh" : "gelu", {arg(0)}, value_id);
  }
  if (TermPtr activation = piecewise_activation(node, name, value_id)) return activation;
  if (is_comparison_op(name)) return make_op(name, {arg(0), arg(1, "other")}, value_id);
  if (name == "where")
    return make_op("where", {arg(0, "condition"), arg(1, "self"), arg(2, "other")}, value_id);
  if (name == "masked_fill")
    return make_op("where", {arg(1, "mask"), arg(2, "value"), arg(0, "self")}, value_id);
  if (name == "add" || name == "sub")
    return make_op(name, {arg(0), scaled(arg(1), "alpha")}, value_id);
  if (name == "rsub") return make_op("sub", {arg(1), scaled(arg(0), "alpha")}, value_id);
  if (name == "mul") return make_op("mul", {arg(0), arg(1)}, value_id);
  if (name == "div" || name == "true_divide") {
    const GraphArg* mode = node.kwarg("rounding_mode");
    if (mode && !mode->is_none()) return make_opaque(node.op + " with a rounding mode", value_id);
    return make_op("div", {arg(0), arg(1)}, value_id);
  }
  if (name == "reciprocal") return make_op("div", {make_constant(1), arg(0)}, value_id);
  if (name == "square") return make_op("mul", {arg(0), arg(0)}, value_id);
  if (name == "pow") {
    const GraphArg* exponent_arg = node.arg(1, "exponent");
    const double exponent =
        exponent_arg ? exponent_arg->as_float().value_or(std::nan("")) : std::nan("");
    const TermPtr base = arg(0);
    if (exponent == 1.0) return base;
    if (exponent == 2.0) return make_op("mul", {base, base}, value_id);
    if (exponent == 3.0) return make_op("mul", {make_op("mul", {base, base}), base}, value_id);
    if (exponent == 0.5) return make_op("sqrt", {base}, value_id);
    if (exponent == -0.5) return make_op("rsqrt", {base}, value_id);
    if (exponent == -1.0) return make_op("div", {make_constant(1), base}, value_id);
    return make_opaque("pow with an exponent other than -1, -0.5, 0.5, 1, 2 or 3", value_id);
  }
  if (name == "maximum" || name == "minimum")
    return make_op(name == "maximum" ? "max" : "min", {arg(0), arg(1)}, value_id);
  if (name == "clamp_min" || name == "clamp_max")
    return make_op(name == "clamp_min" ? "max" : "min", {arg(0), arg(1)}, value_id);
  if (name == "clamp") {
    TermPtr result = arg(0);
    const GraphArg* low = node.arg(1, "min");
    const GraphArg* high = node.arg(2, "max");
    if (low && !low->is_none()) result = make_op("max", {result, arg(1, "min")});
    if (high && !high->is_none()) result = make_op("min", {result, arg(2, "max")});
    auto copy = std::make_shared<Term>(*result);
    copy->value = value_id;
    return copy;
  }
  if (name == "sum" || name == "mean" || name == "amax" || name == "amin" || name == "var")
    return reduction(node, value_id, name);
  if (name == "max" || name == "min") {
    // max.dim / min.dim: (values, indices); the values are an amax / amin.
    if (node.overload() != "dim" || output_index != 0) return make_opaque(node.op, value_id);
    return reduction(node, value_id, name == "max" ? "amax" : "amin");
  }
  if (name == "var_mean") {
    TermPtr term = reduction(node, value_id, output_index == 0 ? "var" : "mean");
    if (output_index == 1) {
      auto mean = std::make_shared<Term>(*term);
      mean->number = 0;
      return mean;
    }
    return term;
  }
  if (name == "logsumexp") return reduction(node, value_id, "logsumexp");
  if (name == "_softmax" || name == "_log_softmax" || name == "softmax" || name == "log_softmax") {
    TermPtr term = reduction(node, value_id,
                             name.find("log") != std::string::npos ? "log_softmax" : "softmax");
    auto copy = std::make_shared<Term>(*term);
    copy->keepdim = true;
    return copy;
  }
  if (name == "native_layer_norm") {
    if (output_index != 0) return make_opaque("the mean or rstd output of " + node.op, value_id);
    auto term = std::make_shared<Term>();
    term->kind = Term::Kind::Op;
    term->op = "layer_norm";
    term->value = value_id;
    TermPtr x = arg(0, "input");
    const auto shape = node.arg(1, "normalized_shape");
    const auto normalized = shape ? shape->as_int_expr_list() : std::nullopt;
    const GraphArg* eps = node.arg(4, "eps");
    if (!x || x->value < 0 || !normalized || !eps || !eps->as_float())
      return make_opaque(node.op + " with arguments the matcher cannot read", value_id);
    const auto rank = static_cast<int64_t>(graph_.value(x->value).rank());
    for (std::size_t i = 0; i < normalized->size(); ++i)
      term->dims.push_back(rank - static_cast<int64_t>(normalized->size()) +
                           static_cast<int64_t>(i));
    term->number = *eps->as_float();
    term->args = {x, arg(2, "weight"), arg(3, "bias")};
    term->has_weight = term->args[1] != nullptr;
    term->has_bias = term->args[2] != nullptr;
    return term;
  }
  if (name == "mm") return make_op("mm", {arg(0), arg(1, "mat2")}, value_id);
  if (name == "addmm") {
    TermPtr product = make_op("mm", {arg(1, "mat1"), arg(2, "mat2")}, value_id);
    const GraphArg* beta = node.kwarg("beta");
    const GraphArg* alpha = node.kwarg("alpha");
    const auto beta_value = beta ? beta->as_float() : std::optional<double>(1.0);
    const auto alpha_value = alpha ? alpha->as_float() : std::optional<double>(1.0);
    if (!beta_value || !alpha_value)
      return make_opaque(node.op + " with symbolic scales", value_id);
    TermPtr bias = arg(0);
    if (*alpha_value != 1.0) product = make_op("mul", {product, make_constant(*alpha_value)});
    if (*beta_value != 1.0) bias = make_op("mul", {make_constant(*beta_value), bias});
    return make_op("add", {product, bias}, value_id);
  }
  return make_opaque(node.op, value_id);
}

const Term* find_opaque(const Term& term) {
  if (term.kind == Term::Kind::Opaque) return &term;
  for (const TermPtr& arg : term.args)
    if (arg)
      if (const Term* found = find_opaque(*arg)) return found;
  return nullptr;
}

std::string term_key(const Term& term) {
  switch (term.kind) {
    case Term::Kind::Leaf:
      return fmt::format("{}@{}", term.input, term.access);
    case Term::Kind::Scalar:
      return "$" + term.input;
    case Term::Kind::Constant:
      return number_key(term.number);
    case Term::Kind::Opaque:
      return "?" + term.op;
    case Term::Kind::Op:
      break;
  }
  std::string key = term.op + "(";
  for (const TermPtr& arg : term.args) key += (arg ? term_key(*arg) : "none") + ",";
  for (int64_t dim : term.dims) key += fmt::format("d{},", dim);
  if (term.keepdim) key += "keep,";
  if (term.op == "var" || term.op == "layer_norm") key += number_key(term.number);
  return key + ")";
}

std::vector<std::string> term_inputs(const Term& term) {
  std::vector<std::string> names;
  const auto visit = [&](const auto& self, const Term& t) -> void {
    if ((t.kind == Term::Kind::Leaf || t.kind == Term::Kind::Scalar) &&
        std::find(names.begin(), names.end(), t.input) == names.end())
      names.push_back(t.input);
    for (const TermPtr& arg : t.args)
      if (arg) self(self, *arg);
  };
  visit(visit, term);
  return names;
}

bool is_elementwise_op(const std::string& op) {
  static const std::set<std::string, std::less<>> ops = {
      "add",       "sub",  "mul",     "div",  "neg", "relu", "gelu",
      "gelu_tanh", "silu", "sigmoid", "tanh", "exp", "log",  "log1p",
      "expm1",     "sqrt", "rsqrt",   "abs",  "min", "max",  "where"};
  return ops.count(op) > 0 || is_comparison_op(op);
}

const char* comparison_symbol(std::string_view op) {
  static const std::map<std::string, const char*, std::less<>> symbols = {
      {"lt", "<"}, {"le", "<="}, {"gt", ">"}, {"ge", ">="}, {"eq", "=="}, {"ne", "!="}};
  const auto found = symbols.find(op);
  return found == symbols.end() ? nullptr : found->second;
}

bool is_comparison_op(std::string_view op) {
  return comparison_symbol(op) != nullptr;
}

std::string shape_string(const std::vector<SymSize>& shape) {
  std::string text = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + shape[i].text();
  return text + "]";
}

std::optional<LeafAccess> classify_leaf(const OpGraph& graph, const Term& leaf,
                                        const std::vector<SymSize>& out_shape, std::string* why) {
  const GraphValue& read = graph.value(leaf.access);
  const GraphValue& own = graph.value(graph.find_input(leaf.input)->value);
  const std::size_t rank = out_shape.size();
  if (read.rank() > rank) {
    *why = fmt::format("{} is read with shape {}, more axes than the result {}", leaf.input,
                       shape_string(read.shape), shape_string(out_shape));
    return std::nullopt;
  }
  // The element step of each output axis (0 where the read broadcasts).
  std::vector<SymSize> step(rank, SymSize::constant(0));
  const std::size_t lead = rank - read.rank();
  for (std::size_t d = lead; d < rank; ++d) {
    const std::size_t r = d - lead;
    if (read.shape[r].is_one() && !out_shape[d].is_one()) continue;
    if (!(read.shape[r] == out_shape[d])) {
      *why = fmt::format("{} is read with shape {}, which does not broadcast to {}", leaf.input,
                         shape_string(read.shape), shape_string(out_shape));
      return std::nullopt;
    }
    step[d] = read.stride[r];
  }
  const auto steps_are = [&](const std::vector<SymSize>& expected) {
    for (std::size_t d = 0; d < rank; ++d)
      if (!out_shape[d].is_one() && !(step[d] == expected[d])) return false;
    return true;
  };
  LeafAccess access;
  access.column_offset = read.offset;
  if (own.rank() == 0) {
    if (steps_are(std::vector<SymSize>(rank, SymSize::constant(0)))) {
      access.kind = LeafAccess::Kind::Scalar0D;
      return access;
    }
  } else if (rank > 0) {
    access.width = own.shape.back();
    std::vector<SymSize> expected(rank, SymSize::constant(0));
    expected[rank - 1] = SymSize::constant(1);
    if (own.rank() == 1 && steps_are(expected)) {
      access.kind = LeafAccess::Kind::Column;
      return access;
    }
    // A row tensor: the output's leading extents, rows of the input's own width.
    bool rows_match = own.rank() == rank;
    for (std::size_t d = 0; rows_match && d + 1 < rank; ++d)
      rows_match = own.shape[d] == out_shape[d];
    SymSize stride = own.shape.back();
    for (std::size_t d = rank - 1; rows_match && d-- > 0;) {
      expected[d] = stride;
      stride = stride * out_shape[d];
    }
    if (rows_match && steps_are(expected)) {
      access.kind = LeafAccess::Kind::Row;
      return access;
    }
  }
  *why = fmt::format(
      "{} {} is read with strides {} and offset {} for a result {}: not row-major rows, a "
      "per-column vector or a scalar",
      leaf.input, shape_string(own.shape), shape_string(read.stride), read.offset.text(),
      shape_string(out_shape));
  return std::nullopt;
}

}  // namespace kernelarc
