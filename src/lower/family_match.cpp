#include "lower/family_match.h"

#include <cmath>
#include <map>

#include <fmt/format.h>

#include "lower/family_match_internal.h"

namespace kernelarc {

namespace {

struct Precedence {
  static constexpr int sum = 1, product = 2, unary = 3, atom = 4;
};

struct Written {
  std::string text;
  int precedence = Precedence::atom;
};

class ExpressionWriter {
 public:
  ExpressionWriter(const TermNamer& namer, std::string* why) : namer_(namer), why_(why) {}

  std::optional<Written> write(const Term& term) {
    if (term.kind == Term::Kind::Constant) {
      if (!std::isfinite(term.number)) {
        *why_ = fmt::format("the literal {} has no spelling in an element-wise expression",
                            term.number);
        return std::nullopt;
      }
      const std::string text = fmt::format("{}", term.number);
      return Written{text, text.starts_with('-') ? Precedence::unary : Precedence::atom};
    }
    if (term.kind != Term::Kind::Op || !is_elementwise_op(term.op)) {
      const auto name = namer_(term, why_);
      if (!name) return std::nullopt;
      return Written{*name, Precedence::atom};
    }
    if (term.op == "where" || is_comparison_op(term.op)) return select(term);
    std::vector<Written> args;
    for (const TermPtr& arg : term.args) {
      auto written = write(*arg);
      if (!written) return std::nullopt;
      args.push_back(std::move(*written));
    }
    const auto operand = [](const Written& w, int minimum) {
      return w.precedence < minimum ? "(" + w.text + ")" : w.text;
    };
    static const std::map<std::string, std::pair<const char*, int>, std::less<>> binary = {
        {"add", {" + ", Precedence::sum}},
        {"sub", {" - ", Precedence::sum}},
        {"mul", {" * ", Precedence::product}},
        {"div", {" / ", Precedence::product}}};
    if (const auto op = binary.find(term.op); op != binary.end()) {
      const int level = op->second.second;
      // The parser folds left; a right operand of the same level keeps its parentheses, as
      // float arithmetic is not associative.
      return Written{operand(args[0], level) + op->second.first + operand(args[1], level + 1),
                     level};
    }
    if (term.op == "neg")
      return Written{"-" + operand(args[0], Precedence::unary), Precedence::unary};
    std::string text = term.op + "(";
    for (std::size_t i = 0; i < args.size(); ++i) text += (i ? ", " : "") + args[i].text;
    return Written{text + ")", Precedence::atom};
  }

 private:
  // where(cond, a, b); a comparison read as a number is where(cond, 1, 0), as torch promotes
  // True and False to 1 and 0.
  std::optional<Written> select(const Term& term) {
    const bool comparison = is_comparison_op(term.op);
    const Term& cond = comparison ? term : *term.args[0];
    if (cond.kind != Term::Kind::Op || !is_comparison_op(cond.op)) {
      const bool input = cond.kind == Term::Kind::Leaf || cond.kind == Term::Kind::Scalar;
      *why_ = fmt::format("a where selects on {}, not on a comparison",
                          input                               ? "the input `" + cond.input + "`"
                          : cond.kind == Term::Kind::Op       ? "a " + cond.op
                          : cond.kind == Term::Kind::Constant ? std::string("a constant")
                                                              : cond.op);
      return std::nullopt;
    }
    std::string text = "where(";
    // A comparison binds more loosely than any operator, so its sides need no parentheses.
    const auto add = [&](const Term& operand, const char* separator) {
      auto written = write(operand);
      if (written) text += written->text + separator;
      return written.has_value();
    };
    const std::string compare = fmt::format(" {} ", comparison_symbol(cond.op));
    if (!add(*cond.args[0], compare.c_str()) || !add(*cond.args[1], ", ")) return std::nullopt;
    if (comparison) return Written{text + "1, 0)", Precedence::atom};
    if (!add(*term.args[1], ", ") || !add(*term.args[2], ")")) return std::nullopt;
    return Written{text, Precedence::atom};
  }

  const TermNamer& namer_;
  std::string* why_;
};

/// Why no family serves the graph when none even has its shape: the first op no family knows.
std::string describe_unserved(const MatchContext& context) {
  for (const auto& [name, term] : context.outputs)
    if (const Term* opaque = find_opaque(*term))
      return fmt::format("output `{}` needs {}, which no hand-written family computes", name,
                         opaque->op);
  return "no hand-written family computes this graph";
}

}  // namespace

const TensorSpec* MatchContext::input_spec(const std::string& name) const {
  for (const TensorSpec& spec : definition.inputs)
    if (spec.name == name) return &spec;
  return nullptr;
}

const TensorSpec* MatchContext::output_spec(const std::string& name) const {
  for (const TensorSpec& spec : definition.outputs)
    if (spec.name == name) return &spec;
  return nullptr;
}

const GraphValue& MatchContext::output_value(std::size_t index) const {
  return graph.value(graph.outputs.at(index).value);
}

FamilyMatch no_match(std::string reason) {
  FamilyMatch match;
  match.reason = std::move(reason);
  return match;
}

std::optional<std::string> expression_text(const Term& term, const TermNamer& namer,
                                           std::string* why) {
  auto written = ExpressionWriter(namer, why).write(term);
  if (!written) return std::nullopt;
  return written->text;
}

bool is_family_float(DType dtype) {
  return dtype == DType::Float32 || dtype == DType::Float16 || dtype == DType::BFloat16;
}

FamilyMatch match_family(const OpGraph& graph, const Definition& definition) {
  MatchContext context{graph, definition, TermBuilder(graph), {}};
  if (graph.outputs.empty()) return no_match("the graph returns nothing");
  // The matchers read values as pure functions of their producers; an in-place write (copy_,
  // an indexed assignment) changes a buffer under values already read, which no family
  // expresses. The fused lowering decides whether such a write matters.
  for (const GraphNode& node : graph.nodes) {
    if (node.view) continue;
    for (const int64_t output : node.outputs) {
      if (output < 0) continue;
      const GraphBuffer& buffer = graph.buffer_of(output);
      if (buffer.source != GraphBuffer::Source::Node || buffer.node != node.id)
        return no_match(
            fmt::format("{} (op {}) writes in place, which no hand-written family "
                        "expresses",
                        node.op, node.id));
    }
  }
  for (const GraphOutput& output : graph.outputs) {
    if (output.value < 0) return no_match(fmt::format("output `{}` is not a tensor", output.name));
    context.outputs.emplace_back(output.name, context.terms.term(output.value));
  }
  // The most specific family first: an MLP is three GEMMs, a gemm may end in element-wise work,
  // and a row reduction may start with it.
  std::optional<FamilyMatch> refusal;
  for (const auto matcher :
       {match_mlp_family, match_gemm_family, match_row_family, match_elementwise_family}) {
    std::optional<FamilyMatch> match = matcher(context);
    if (!match) continue;
    if (match->ok) return *match;
    if (!refusal) refusal = std::move(match);
  }
  return refusal ? *refusal : no_match(describe_unserved(context));
}

}  // namespace kernelarc
