// The element-wise binder: families "elementwise" and "activation". One output [..., C]; each
// variable of kernelarc.op_params.expression reads a row tensor at a column offset, a
// per-column vector or a scalar. See docs/TEMPLATES.md ("Family: elementwise").
#include "synth/family_elementwise.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "synth/family.h"
#include "synth/family_support.h"

namespace kernelarc {

namespace {

constexpr const char* kElementwiseFamilies[] = {"elementwise", "activation"};

std::string tensor_shape_text(const TensorSpec& tensor) {
  return tensor.is_scalar() ? "null" : shape_text(*tensor.shape);
}

bool is_identifier(std::string_view name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

// --- axis expressions in C ------------------------------------------------------------------

class AxisCodeWriter {
 public:
  static constexpr const char* kSupported = " (only + - * // % and parentheses are supported here)";

  AxisCodeWriter(std::string_view text, const std::vector<std::string>& axes)
      : text_(text), axes_(axes) {}

  std::string write() {
    std::string code = sum();
    skip_spaces();
    if (pos_ < text_.size()) fail(fmt::format("unexpected '{}'{}", text_[pos_], kSupported));
    return code;
  }

 private:
  [[noreturn]] void fail(std::string_view problem) const {
    throw ExprError(fmt::format("at column {}: {}", pos_ + 1, problem));
  }

  void skip_spaces() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }

  bool accept(std::string_view op) {
    skip_spaces();
    if (text_.substr(pos_, op.size()) != op) return false;
    // "*" must not match the start of "**", nor "/" that of "//".
    const std::size_t after = pos_ + op.size();
    if ((op == "*" || op == "/") && after < text_.size() && text_[after] == op[0]) return false;
    pos_ = after;
    return true;
  }

  std::string sum() {
    std::string left = product();
    while (true) {
      if (accept("+")) {
        left = "(" + left + " + " + product() + ")";
      } else if (accept("-")) {
        left = "(" + left + " - " + product() + ")";
      } else {
        return left;
      }
    }
  }

  std::string product() {
    std::string left = unary();
    while (true) {
      if (accept("*")) {
        left = "(" + left + " * " + unary() + ")";
      } else if (accept("//") || accept("/")) {
        // "/" must divide exactly, where it equals floor division.
        left = "ka_floordiv(" + left + ", " + unary() + ")";
      } else if (accept("%")) {
        left = "ka_floormod(" + left + ", " + unary() + ")";
      } else {
        return left;
      }
    }
  }

  std::string unary() {
    if (accept("-")) return "(-" + unary() + ")";
    if (accept("+")) return unary();
    return atom();
  }

  std::string atom() {
    skip_spaces();
    if (accept("(")) {
      std::string inner = sum();
      if (!accept(")")) fail("expected ')'");
      return inner;
    }
    const std::size_t start = pos_;
    if (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
      return std::string(text_.substr(start, pos_ - start)) + "LL";
    }
    while (pos_ < text_.size() &&
           (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_'))
      ++pos_;
    const std::string name(text_.substr(start, pos_ - start));
    if (name.empty()) {
      pos_ = start;
      if (pos_ >= text_.size()) fail("unexpected end of expression");
      fail(fmt::format("unexpected '{}'{}", text_[pos_], kSupported));
    }
    if (std::find(axes_.begin(), axes_.end(), name) == axes_.end()) {
      pos_ = start;
      fail(fmt::format("unknown axis '{}'", name));
    }
    return "ka_axis_" + name;
  }

  std::string_view text_;
  const std::vector<std::string>& axes_;
  std::size_t pos_ = 0;
};

// --- the checks -----------------------------------------------------------------------------

std::optional<int64_t> static_value(std::string_view expression, const AxisValues& known) {
  try {
    const std::set<std::string> uses = expr_variables(expression);
    for (const std::string& use : uses)
      if (!known.contains(use)) return std::nullopt;
    return evaluate_expr(expression, known);
  } catch (const ExprError&) {
    return std::nullopt;
  }
}

// Two axes of a shape agree when they are the same axis or the same constant.
bool same_axis(const std::string& a, const std::string& b, const AxisValues& known) {
  if (a == b) return true;
  const auto va = known.find(a), vb = known.find(b);
  return va != known.end() && vb != known.end() && va->second == vb->second;
}

struct OperandSpec {
  std::string tensor;
  std::string offset_text = "0";
  bool offset_given = false;
};

const TensorSpec* find_input(const Definition& def, std::string_view name, int* index) {
  for (std::size_t i = 0; i < def.inputs.size(); ++i) {
    if (def.inputs[i].name == name) {
      *index = static_cast<int>(i);
      return &def.inputs[i];
    }
  }
  return nullptr;
}

std::map<std::string, OperandSpec> read_operands(const Definition& def) {
  std::map<std::string, OperandSpec> operands;
  for (const TensorSpec& input : def.inputs) operands[input.name] = {input.name, "0", false};
  const OrderedJson& params = def.ext.op_params;
  const auto found = params.find("operands");
  if (found == params.end()) return operands;
  const std::string field = "kernelarc.op_params.operands";
  if (!found->is_object())
    mismatch(def, field, "expected an object {name: {tensor, column_offset}}");
  for (const auto& [name, spec] : found->items()) {
    const std::string where = field + "." + name;
    if (!is_identifier(name)) mismatch(def, where, "expected an identifier as the operand's name");
    if (!spec.is_object()) mismatch(def, where, "expected an object {tensor, column_offset}");
    OperandSpec operand;
    for (const auto& [key, value] : spec.items()) {
      if (key == "tensor") {
        int index = 0;
        if (!value.is_string() || !find_input(def, value.get<std::string>(), &index)) {
          std::vector<std::string> inputs;
          for (const TensorSpec& input : def.inputs) inputs.push_back(input.name);
          mismatch(def, where + ".tensor",
                   fmt::format("expected the name of an input ({}), got {}",
                               fmt::join(inputs, ", "), value.dump()));
        }
        operand.tensor = value.get<std::string>();
      } else if (key == "column_offset") {
        if (value.is_number_integer() && value.get<int64_t>() >= 0) {
          operand.offset_text = std::to_string(value.get<int64_t>());
          operand.offset_given = true;
        } else if (value.is_string()) {
          operand.offset_text = value.get<std::string>();
          operand.offset_given = true;
        } else {
          mismatch(def, where + ".column_offset",
                   "expected an integer >= 0 or an axis expression string, got " + value.dump());
        }
      } else {
        mismatch(def, where + "." + key, "unknown field (expected tensor, column_offset)");
      }
    }
    if (operand.tensor.empty()) mismatch(def, where + ".tensor", "missing");
    operands[name] = operand;
  }
  return operands;
}

std::string read_expression(const Definition& def) {
  const OrderedJson& params = def.ext.op_params;
  for (const auto& [key, value] : params.items()) {
    if (key != "expression" && key != "operands")
      mismatch(def, "kernelarc.op_params." + key, "unknown field (expected expression, operands)");
  }
  const auto found = params.find("expression");
  if (found == params.end()) {
    mismatch(def, "kernelarc.op_params.expression",
             "missing (an element-wise expression such as \"silu(gate) * up\")");
  }
  if (!found->is_string()) mismatch(def, "kernelarc.op_params.expression", "expected a string");
  return found->get<std::string>();
}

class OperandChecker {
 public:
  OperandChecker(const Definition& def, const TensorSpec& output)
      : def_(def), output_shape_(*output.shape), known_(static_axes(def)), axes_(axis_names(def)) {}

  ElementwiseOperand check(const std::string& name, const OperandSpec& spec) const {
    ElementwiseOperand operand;
    operand.name = name;
    operand.offset_text = spec.offset_text;
    const TensorSpec& tensor = *find_input(def_, spec.tensor, &operand.input);
    const std::string tensor_field = "inputs." + tensor.name;
    const std::string offset_field = "kernelarc.op_params.operands." + name + ".column_offset";
    operand.kind = kind_of(tensor, tensor_field);

    const bool scalar = operand.kind == OperandKind::Scalar;
    if (scalar ? !is_scalar_operand_dtype(tensor.dtype) : !is_packed_float_dtype(tensor.dtype)) {
      mismatch(def_, tensor_field + ".dtype",
               fmt::format("expected {}, got {}",
                           scalar ? "float32, float16, bfloat16, float64, int32 or int64"
                                  : "float32, float16 or bfloat16",
                           dtype_name(tensor.dtype)));
    }
    try {
      operand.offset_code = axis_expression_code(spec.offset_text, axes_);
    } catch (const ExprError& error) {
      mismatch(def_, offset_field, fmt::format("\"{}\": {}", spec.offset_text, error.what()));
    }
    const std::optional<int64_t> offset = static_value(spec.offset_text, known_);
    if (scalar) {
      if (offset != 0) mismatch(def_, offset_field, "a scalar operand takes no column offset");
      return operand;
    }
    operand.width_axis = tensor.shape->back();
    // Without an offset the operand broadcasts as in PyTorch: its last axis is the output's.
    if (!spec.offset_given && !same_axis(operand.width_axis, output_shape_.back(), known_)) {
      mismatch(def_, tensor_field + ".shape",
               fmt::format("its last axis {} is not the output's {}; give kernelarc.op_params."
                           "operands.{}.column_offset to read a slice of it",
                           operand.width_axis, output_shape_.back(), name));
    }
    if (offset && *offset < 0)
      mismatch(def_, offset_field, fmt::format("must be >= 0, is {}", *offset));
    const auto width = known_.find(operand.width_axis);
    const auto columns = known_.find(output_shape_.back());
    if (offset && width != known_.end() && columns != known_.end() &&
        *offset + columns->second > width->second) {
      mismatch(def_, offset_field,
               fmt::format("{} + {} columns exceed the width {} of {} ({} = {})", *offset,
                           columns->second, width->second, tensor.name, operand.width_axis,
                           width->second));
    }
    return operand;
  }

 private:
  OperandKind kind_of(const TensorSpec& tensor, const std::string& field) const {
    if (tensor.is_scalar() || tensor.shape->empty()) return OperandKind::Scalar;
    const std::vector<std::string>& shape = *tensor.shape;
    if (shape.size() == output_shape_.size()) {
      bool rows_match = true;
      for (std::size_t d = 0; d + 1 < shape.size(); ++d)
        rows_match = rows_match && same_axis(shape[d], output_shape_[d], known_);
      if (rows_match) return OperandKind::Row;
    }
    if (shape.size() == 1) return OperandKind::Column;
    std::vector<std::string> rows(output_shape_.begin(), output_shape_.end() - 1);
    rows.push_back("W");
    mismatch(def_, field + ".shape",
             fmt::format("expected [{}] (rows of the output), [W] (per column) or a scalar, got {}",
                         fmt::join(rows, ", "), tensor_shape_text(tensor)));
  }

  const Definition& def_;
  const std::vector<std::string>& output_shape_;
  AxisValues known_;
  std::vector<std::string> axes_;
};

// Where ka_bind finds each axis: a constant, a tensor's dimension, or an expression over axes
// found before it.
void plan_axis_sources(const Definition& def, ElementwiseProblem* problem) {
  std::map<std::string, std::string> code;
  auto find_in_shapes = [&](const std::string& axis) -> std::optional<std::string> {
    for (std::size_t i = 0; i < def.inputs.size(); ++i) {
      const auto& shape = def.inputs[i].shape;
      for (std::size_t d = 0; shape && d < shape->size(); ++d)
        if ((*shape)[d] == axis) return fmt::format("inputs[{}].shape[{}]", i, d);
    }
    const auto& shape = *def.outputs[0].shape;
    for (std::size_t d = 0; d < shape.size(); ++d)
      if (shape[d] == axis) return fmt::format("outputs[0].shape[{}]", d);
    return std::nullopt;
  };
  std::vector<AxisSource> sources;
  std::vector<const Axis*> pending;
  for (const Axis& axis : def.axes) {
    std::optional<std::string> source;
    if (axis.kind == AxisKind::Const) {
      source = fmt::format("{}LL", axis.value);
    } else {
      source = find_in_shapes(axis.name);
    }
    if (source) {
      sources.push_back({axis.name, *source});
    } else if (axis.kind == AxisKind::Expr) {
      pending.push_back(&axis);
    } else {
      problem->axis_sources_field = "axes." + axis.name;
      problem->axis_sources_problem =
          "a var axis that no tensor's shape names cannot be read from the tensors by ka_bind";
      return;
    }
  }
  while (!pending.empty()) {
    std::vector<std::string> ready;
    for (const AxisSource& source : sources) ready.push_back(source.name);
    const auto next = std::find_if(pending.begin(), pending.end(), [&](const Axis* axis) {
      try {
        sources.push_back({axis->name, axis_expression_code(axis->expression, ready)});
        return true;
      } catch (const ExprError&) {
        return false;
      }
    });
    if (next == pending.end()) {
      problem->axis_sources_field = "axes." + pending.front()->name;
      problem->axis_sources_problem = fmt::format(
          "\"{}\" cannot be computed by ka_bind (only + - * // % over axes that tensor shapes "
          "name)",
          pending.front()->expression);
      return;
    }
    pending.erase(next);
  }
  problem->axis_sources = std::move(sources);
}

ElementwiseProblem check_problem(const Definition& def) {
  ElementwiseProblem problem;
  problem.family = def.ext.op_family;
  problem.axes = axis_names(def);
  if (def.outputs.size() != 1)
    mismatch(def, "outputs", fmt::format("expected one output, got {}", def.outputs.size()));
  const TensorSpec& output = def.outputs[0];
  const std::string output_field = "outputs." + output.name;
  if (output.is_scalar() || output.shape->empty())
    mismatch(def, output_field + ".shape",
             "expected [..., C] with at least one axis, got " + tensor_shape_text(output));
  if (!is_packed_float_dtype(output.dtype)) {
    mismatch(
        def, output_field + ".dtype",
        fmt::format("expected float32, float16 or bfloat16, got {}", dtype_name(output.dtype)));
  }
  problem.row_axes.assign(output.shape->begin(), output.shape->end() - 1);
  problem.column_axis = output.shape->back();

  const std::string text = read_expression(def);
  const std::map<std::string, OperandSpec> specs = read_operands(def);
  std::set<std::string> variables;
  for (const auto& [name, spec] : specs) variables.insert(name);
  const std::string where = fmt::format("{}: kernelarc.op_params.expression",
                                        def.path.empty() ? def.name : def.path.string());
  problem.expression = ElementwiseExpr::parse(text, where, variables);

  const OperandChecker checker(def, output);
  for (const std::string& name : problem.expression.variables())
    problem.operands.push_back(checker.check(name, specs.at(name)));
  plan_axis_sources(def, &problem);
  return problem;
}

class ElementwiseBinder : public FamilyBinder {
 public:
  std::vector<std::string> families() const override {
    return {std::begin(kElementwiseFamilies), std::end(kElementwiseFamilies)};
  }

  FamilyBinding bind(const Definition& definition, const KernelTemplate& kernel) const override {
    const ElementwiseProblem problem = check_problem(definition);
    if (kernel.build != TemplateBuild::Nvrtc && problem.axis_sources.empty())
      mismatch(definition, problem.axis_sources_field, problem.axis_sources_problem);

    FamilyBinding binding;
    binding.header = generate_elementwise_header(problem, definition, kernel);
    binding.sizes["ROWS"] =
        problem.row_axes.empty() ? "1" : fmt::format("{}", fmt::join(problem.row_axes, " * "));
    binding.sizes["COLS"] = problem.column_axis;
    const std::size_t out_bytes = dtype_size(definition.outputs[0].dtype);
    std::size_t max_bytes = out_bytes;
    for (const ElementwiseOperand& operand : problem.operands) {
      if (operand.kind != OperandKind::Scalar)
        max_bytes = std::max(max_bytes, dtype_size(definition.inputs[operand.input].dtype));
    }
    binding.constants["OUT_BYTES"] = static_cast<int64_t>(out_bytes);
    binding.constants["MAX_ELEM_BYTES"] = static_cast<int64_t>(max_bytes);
    return binding;
  }
};

}  // namespace

std::string axis_expression_code(std::string_view expression,
                                 const std::vector<std::string>& axes) {
  return AxisCodeWriter(expression, axes).write();
}

std::unique_ptr<FamilyBinder> make_elementwise_binder() {
  return std::make_unique<ElementwiseBinder>();
}

}  // namespace kernelarc
