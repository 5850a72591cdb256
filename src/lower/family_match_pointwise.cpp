// The families that write one value per output element: elementwise (an expression over row
// operands at column offsets, per-column vectors and scalars) and gemm (an epilogue over the
// accumulator of A @ B, per-column vectors, full [M, N] inputs and scalars).
#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "lower/family_match_internal.h"

namespace kernelarc {

namespace {

/// Whether `term` is element-wise all the way down to its leaves (`stop` is a leaf too).
bool is_pointwise(const Term& term, const Term* stop = nullptr) {
  if (&term == stop) return true;
  switch (term.kind) {
    case Term::Kind::Leaf:
    case Term::Kind::Scalar:
    case Term::Kind::Constant:
      return true;
    case Term::Kind::Opaque:
      return false;
    case Term::Kind::Op:
      break;
  }
  if (!is_elementwise_op(term.op)) return false;
  return std::all_of(term.args.begin(), term.args.end(),
                     [&](const TermPtr& arg) { return is_pointwise(*arg, stop); });
}

/// The first term under `term` that is not element-wise, for messages.
const Term* first_non_pointwise(const Term& term) {
  if (term.kind == Term::Kind::Opaque ||
      (term.kind == Term::Kind::Op && !is_elementwise_op(term.op)))
    return &term;
  for (const TermPtr& arg : term.args)
    if (const Term* found = first_non_pointwise(*arg)) return found;
  return nullptr;
}

std::string unused_inputs(const MatchContext& context, const Term& term) {
  const std::vector<std::string> used = term_inputs(term);
  std::vector<std::string> unused;
  for (const TensorSpec& input : context.definition.inputs)
    if (std::find(used.begin(), used.end(), input.name) == used.end())
      unused.push_back("`" + input.name + "`");
  return fmt::format("{}", fmt::join(unused, ", "));
}

// --- elementwise ------------------------------------------------------------------------------

class ElementwiseMatch {
 public:
  ElementwiseMatch(const MatchContext& context, std::vector<SymSize> out_shape)
      : context_(context), out_shape_(std::move(out_shape)) {}

  FamilyMatch build(const Term& term) {
    const std::string output = context_.outputs[0].first;
    const TensorSpec& spec = *context_.output_spec(output);
    if (!is_family_float(spec.dtype))
      return fail(fmt::format("the output `{}` is {}, not float32, float16 or bfloat16", output,
                              dtype_name(spec.dtype)));
    const auto text = expression_text(
        term, [&](const Term& t, std::string* why) { return variable(t, why); }, &why_);
    if (!text) return fail(why_);
    FamilyMatch match;
    match.ok = true;
    match.family = "elementwise";
    match.op_params = OrderedJson::object();
    match.op_params["expression"] = *text;
    if (!operands_.empty()) match.op_params["operands"] = operands_;
    match.summary = fmt::format("elementwise {} over {}", *text, shape_string(out_shape_));
    return match;
  }

 private:
  static FamilyMatch fail(const std::string& why) { return no_match("elementwise: " + why); }

  std::optional<std::string> variable(const Term& term, std::string* why) {
    if (term.kind == Term::Kind::Scalar) return term.input;
    if (term.kind != Term::Kind::Leaf) {
      *why = "not element-wise";
      return std::nullopt;
    }
    const auto access = classify_leaf(context_.graph, term, out_shape_, why);
    if (!access) return std::nullopt;
    const TensorSpec& spec = *context_.input_spec(term.input);
    if (access->kind == LeafAccess::Kind::Scalar0D) return term.input;
    if (!is_family_float(spec.dtype)) {
      *why = fmt::format("input `{}` is {}, not float32, float16 or bfloat16", spec.name,
                         dtype_name(spec.dtype));
      return std::nullopt;
    }
    const std::string key = term.input + "@" + access->column_offset.text();
    if (const auto known = names_.find(key); known != names_.end()) return known->second;
    // The input's own name when it is read whole; a slice of it gets a name of its own and an
    // explicit column offset (the binder wants one whenever the widths differ).
    const bool whole = access->column_offset.is_zero() && access->width == out_shape_.back();
    std::string name = term.input;
    if (!whole || std::any_of(names_.begin(), names_.end(),
                              [&](const auto& entry) { return entry.second == name; })) {
      for (int suffix = 0;; ++suffix) {
        name = fmt::format("{}_{}", term.input, suffix);
        if (!context_.input_spec(name) &&
            std::none_of(names_.begin(), names_.end(),
                         [&](const auto& entry) { return entry.second == name; }))
          break;
      }
    }
    if (!whole || name != term.input) {
      OrderedJson operand = OrderedJson::object();
      operand["tensor"] = term.input;
      operand["column_offset"] = access->column_offset.text();
      operands_[name] = operand;
    }
    names_[key] = name;
    return name;
  }

  const MatchContext& context_;
  std::vector<SymSize> out_shape_;
  std::map<std::string, std::string> names_;  ///< input@offset -> variable
  OrderedJson operands_ = OrderedJson::object();
  std::string why_;
};

// --- gemm -------------------------------------------------------------------------------------

FamilyMatch gemm_match(const MatchContext& context, const Term& term, const Term& product) {
  const auto fail = [](const std::string& why) { return no_match("gemm: " + why); };
  const std::vector<SymSize>& out_shape = context.output_value(0).shape;
  if (out_shape.size() != 2)
    return fail(fmt::format("the output has shape {}; the gemm family writes a matrix [M, N]",
                            shape_string(out_shape)));
  if (product.value < 0 || !(context.graph.value(product.value).shape == out_shape))
    return fail("the epilogue changes the shape of the product");
  std::string why;
  const auto a = matrix_read(context.graph, *product.args[0], &why);
  const auto b = a ? matrix_read(context.graph, *product.args[1], &why) : std::nullopt;
  if (!a || !b) return fail(why);
  const TensorSpec& a_spec = *context.input_spec(a->input);
  const TensorSpec& b_spec = *context.input_spec(b->input);
  if (a->input == b->input) return fail("A and B are the same input");
  if (a_spec.dtype != b_spec.dtype || !is_family_float(a_spec.dtype))
    return fail(
        fmt::format("A `{}` is {} and B `{}` is {}: the gemm family wants one of float32, "
                    "float16 or bfloat16 for both",
                    a_spec.name, dtype_name(a_spec.dtype), b_spec.name, dtype_name(b_spec.dtype)));
  const TensorSpec& output = *context.output_spec(context.outputs[0].first);
  if (!is_family_float(output.dtype))
    return fail(fmt::format("the output is {}", dtype_name(output.dtype)));

  const TermNamer namer = [&](const Term& t, std::string* why) -> std::optional<std::string> {
    if (&t == &product) return "acc";
    if (t.kind == Term::Kind::Scalar) return t.input;
    if (t.kind != Term::Kind::Leaf) {
      *why = "the epilogue needs " + t.op;
      return std::nullopt;
    }
    if (t.input == a->input || t.input == b->input) {
      *why = fmt::format("the epilogue reads `{}`, an operand of the product", t.input);
      return std::nullopt;
    }
    const auto access = classify_leaf(context.graph, t, out_shape, why);
    if (!access) return std::nullopt;
    const GraphValue& own = context.graph.value(context.graph.find_input(t.input)->value);
    const bool column = access->kind == LeafAccess::Kind::Column && own.shape.size() == 1 &&
                        own.shape[0] == out_shape[1];
    const bool full = access->kind == LeafAccess::Kind::Row && own.shape == out_shape;
    if (access->kind != LeafAccess::Kind::Scalar0D &&
        (!access->column_offset.is_zero() || !(column || full))) {
      *why = fmt::format("the epilogue reads `{}` {}, not as [N], [M, N] or a scalar", t.input,
                         shape_string(own.shape));
      return std::nullopt;
    }
    if (!is_family_float(context.input_spec(t.input)->dtype)) {
      *why = fmt::format("the epilogue input `{}` is not float32, float16 or bfloat16", t.input);
      return std::nullopt;
    }
    return t.input;
  };
  const auto epilogue = expression_text(term, namer, &why);
  if (!epilogue) return fail(why);
  // The binder wants every input other than A and B read by the epilogue.
  for (const TensorSpec& input : context.definition.inputs) {
    if (input.name == a->input || input.name == b->input) continue;
    const std::vector<std::string> used = term_inputs(term);
    if (std::find(used.begin(), used.end(), input.name) == used.end())
      return fail(
          fmt::format("input `{}` is not used, and the gemm family reads every input", input.name));
  }
  FamilyMatch match;
  match.ok = true;
  match.family = "gemm";
  match.op_params = OrderedJson::object();
  if (*epilogue != "acc") match.op_params["epilogue"] = *epilogue;
  // Named, not left to the binder's axis names, which repeat in a square product or weight.
  match.op_params["a"] = a->input;
  match.op_params["a_layout"] = a->as_stored ? "mk" : "km";
  match.op_params["b"] = b->input;
  match.op_params["b_layout"] = b->as_stored ? "kn" : "nk";
  match.summary = fmt::format("gemm {} @ {}{} with epilogue {}", a->input, b->input,
                              b->as_stored ? "" : "^T", *epilogue);
  if (!a->as_stored) match.summary += fmt::format(" (A is `{}` transposed)", a->input);
  return match;
}

}  // namespace

void collect_ops(const Term& term, const std::string& op, std::vector<const Term*>& found) {
  if (term.kind == Term::Kind::Op && term.op == op) found.push_back(&term);
  for (const TermPtr& arg : term.args)
    if (arg) collect_ops(*arg, op, found);
}

std::optional<MatrixRead> matrix_read(const OpGraph& graph, const Term& term, std::string* why) {
  if (term.kind != Term::Kind::Leaf) {
    *why = "an operand of the matrix product is a computed value, not an input";
    return std::nullopt;
  }
  const GraphValue& read = graph.value(term.access);
  const GraphValue& own = graph.value(graph.find_input(term.input)->value);
  if (own.rank() == 2 && read.rank() == 2 && read.offset.is_zero()) {
    if (read.shape == own.shape && read.stride[0] == own.shape[1] && read.stride[1].is_one())
      return MatrixRead{term.input, true};
    if (read.shape[0] == own.shape[1] && read.shape[1] == own.shape[0] && read.stride[0].is_one() &&
        read.stride[1] == own.shape[1])
      return MatrixRead{term.input, false};
  }
  *why = fmt::format("`{}` {} is read with shape {}, strides {}: not the matrix or its transpose",
                     term.input, shape_string(own.shape), shape_string(read.shape),
                     shape_string(read.stride));
  return std::nullopt;
}

std::optional<FamilyMatch> match_gemm_family(MatchContext& context) {
  std::vector<const Term*> products;
  for (const auto& [name, term] : context.outputs) collect_ops(*term, "mm", products);
  // An epilogue that reads the product twice (max(acc, 0.1 * acc)) holds one term twice.
  std::sort(products.begin(), products.end());
  products.erase(std::unique(products.begin(), products.end()), products.end());
  if (products.empty()) return std::nullopt;
  if (context.outputs.size() != 1)
    return no_match(fmt::format("gemm: the graph returns {} outputs; the gemm family writes one",
                                context.outputs.size()));
  if (products.size() != 1)
    return no_match(
        fmt::format("gemm: the graph multiplies {} matrix products; the gemm family computes one",
                    products.size()));
  const Term& term = *context.outputs[0].second;
  if (!is_pointwise(term, products[0]))
    return no_match("gemm: the product is followed by more than an element-wise epilogue");
  return gemm_match(context, term, *products[0]);
}

std::optional<FamilyMatch> match_elementwise_family(MatchContext& context) {
  if (context.outputs.size() != 1) return std::nullopt;
  const Term& term = *context.outputs[0].second;
  if (!is_pointwise(term)) {
    const Term* culprit = first_non_pointwise(term);
    if (culprit && culprit->kind == Term::Kind::Opaque) return std::nullopt;
    return no_match(fmt::format("elementwise: the output needs {}, which is not element-wise",
                                culprit ? culprit->op : "a reduction"));
  }
  const std::vector<SymSize>& shape = context.output_value(0).shape;
  if (shape.empty())
    return no_match("elementwise: the output is a scalar; the family writes [..., C]");
  if (term.kind == Term::Kind::Constant || term.kind == Term::Kind::Scalar)
    return no_match("elementwise: the output reads no tensor (" + unused_inputs(context, term) +
                    " unused)");
  return ElementwiseMatch(context, shape).build(term);
}

}  // namespace kernelarc
