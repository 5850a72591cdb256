// definition.json: parsing and the cross-field checks (axes, shapes, run() signature, ...).
#include <algorithm>
#include <cctype>
#include <charconv>
#include <map>

#include <fmt/format.h>

#include "core/error.h"
#include "core/json_fields.h"
#include "core/problem.h"

namespace kernelarc {
namespace {

std::string join(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& name : names) text += (text.empty() ? "" : ", ") + name;
  return text;
}

std::string trim(std::string_view text) {
  std::size_t begin = 0;
  std::size_t end = text.size();
  while (begin < end && std::isspace(static_cast<unsigned char>(text[begin]))) ++begin;
  while (end > begin && std::isspace(static_cast<unsigned char>(text[end - 1]))) --end;
  return std::string(text.substr(begin, end - begin));
}

// The axis kind as written, or, where "type" is absent or null, the one pydantic's union picks
// (every upstream axis model defaults its "type"): "value" makes a const axis, "expression" an
// expr axis, neither a var axis.
std::string axis_type(const OrderedJson& value, std::string_view where, const std::string& field) {
  if (const OrderedJson* type = find_optional(value, "type")) {
    return expect_string(*type, where, field_path(field, "type"));
  }
  if (find_optional(value, "value")) return "const";
  if (find_optional(value, "expression")) return "expr";
  return "var";
}

// Other keys of an axis (a var axis's "value", ...) are ignored, as upstream ignores them.
Axis parse_axis(const std::string& name, const OrderedJson& value, std::string_view where) {
  const std::string field = field_path("axes", name);
  expect_object(value, where, field);
  Axis axis;
  axis.name = name;
  if (const OrderedJson* description = find_optional(value, "description")) {
    expect_string(*description, where, field_path(field, "description"));
  }
  const std::string type = axis_type(value, where, field);
  if (type == "const") {
    axis.kind = AxisKind::Const;
    axis.value =
        expect_int(require_member(value, "value", where, field), where, field_path(field, "value"));
    if (axis.value < 0) {
      throw_input_error(where, field_path(field, "value"),
                        fmt::format("expected an integer >= 0, got {}", axis.value));
    }
  } else if (type == "var") {
    axis.kind = AxisKind::Var;
  } else if (type == "expr") {
    axis.kind = AxisKind::Expr;
    axis.expression = expect_string(require_member(value, "expression", where, field), where,
                                    field_path(field, "expression"));
  } else {
    throw_input_error(where, field_path(field, "type"),
                      fmt::format("expected \"const\", \"var\" or \"expr\", got \"{}\"", type));
  }
  return axis;
}

// Checks that an expression parses and mentions only axes; returns its variables.
std::set<std::string> check_axis_expr(const std::string& expression, const Definition& def,
                                      std::string_view where, const std::string& field) {
  std::set<std::string> names;
  try {
    names = expr_variables(expression);
  } catch (const ExprError& error) {
    throw_input_error(where, field, fmt::format("\"{}\": {}", expression, error.what()));
  }
  for (const std::string& name : names) {
    if (def.find_axis(name) == nullptr) {
      throw_input_error(where, field,
                        fmt::format("\"{}\" uses \"{}\", which is not an axis", expression, name));
    }
  }
  return names;
}

void check_axis_cycles(const Definition& def, std::string_view where) {
  std::map<std::string, std::set<std::string>> deps;
  for (const Axis& axis : def.axes) {
    if (axis.kind == AxisKind::Expr) {
      deps[axis.name] = check_axis_expr(axis.expression, def, where,
                                        field_path(field_path("axes", axis.name), "expression"));
    }
  }
  enum class Mark { Unvisited, Active, Done };
  std::map<std::string, Mark> marks;
  std::vector<std::string> stack;
  auto visit = [&](auto&& self, const std::string& name) -> void {
    const Mark mark = marks[name];
    if (mark == Mark::Done) return;
    if (mark == Mark::Active) {
      std::string cycle;
      bool in_cycle = false;
      for (const std::string& entry : stack) {
        in_cycle = in_cycle || entry == name;
        if (in_cycle) cycle += entry + " -> ";
      }
      throw_input_error(where, field_path(field_path("axes", name), "expression"),
                        "cyclic dependency " + cycle + name);
    }
    marks[name] = Mark::Active;
    stack.push_back(name);
    for (const std::string& dep : deps[name]) self(self, dep);
    stack.pop_back();
    marks[name] = Mark::Done;
  };
  for (const auto& [name, unused] : deps) visit(visit, name);
}

std::vector<TensorSpec> parse_tensors(const OrderedJson& json, std::string_view key,
                                      const Definition& def, std::string_view where) {
  const OrderedJson& object = require_member(json, key, where, "");
  expect_object(object, where, key);
  std::vector<TensorSpec> specs;
  for (const auto& [name, value] : object.items()) {
    const std::string field = field_path(key, name);
    expect_object(value, where, field);
    TensorSpec spec;
    spec.name = name;
    const OrderedJson& shape = require_member(value, "shape", where, field);
    if (!shape.is_null()) {
      const std::string shape_field = field_path(field, "shape");
      if (!shape.is_array()) {
        throw_input_error(where, shape_field,
                          "expected null or an array of axis names, got " + describe_json(shape));
      }
      spec.shape.emplace();
      for (std::size_t index = 0; index < shape.size(); ++index) {
        const std::string axis_field = field_index(shape_field, index);
        std::string axis = expect_string(shape[index], where, axis_field);
        if (def.find_axis(axis) == nullptr && !literal_size(axis)) {
          throw_input_error(where, axis_field, fmt::format("unknown axis \"{}\"", axis));
        }
        spec.shape->push_back(std::move(axis));
      }
    }
    const std::string dtype_field = field_path(field, "dtype");
    const std::string dtype =
        expect_string(require_member(value, "dtype", where, field), where, dtype_field);
    const auto parsed = dtype_from_name(dtype);
    if (!parsed) {
      throw_input_error(
          where, dtype_field,
          fmt::format("expected one of {}, got \"{}\"", dtype_accepted_names(), dtype));
    }
    spec.dtype = *parsed;
    if (const OrderedJson* description = find_optional(value, "description")) {
      spec.description = expect_string(*description, where, field_path(field, "description"));
    }
    specs.push_back(std::move(spec));
  }
  return specs;
}

// Finds the parameter list of the last top-level `def <name>(...)` in Python source; nullopt
// when there is none. A scan, not a parser: enough to catch a signature that does not match.
// The positional parameters of a Python function: the ones a call with the inputs in order fills.
struct PositionalParams {
  std::vector<std::string> names;
  std::size_t required = 0;  ///< those without a default
  bool variadic = false;     ///< a "*args" takes any further ones
};

std::optional<PositionalParams> top_level_def_params(const std::string& source,
                                                     std::string_view name) {
  std::optional<PositionalParams> result;
  std::size_t line_start = 0;
  while (line_start < source.size()) {
    std::size_t pos = line_start;
    line_start = source.find('\n', line_start);
    line_start = line_start == std::string::npos ? source.size() : line_start + 1;
    if (source.compare(pos, 4, "def ") != 0) continue;
    pos += 4;
    while (pos < source.size() && (source[pos] == ' ' || source[pos] == '\t')) ++pos;
    if (source.compare(pos, name.size(), name) != 0) continue;
    pos += name.size();
    while (pos < source.size() && (source[pos] == ' ' || source[pos] == '\t')) ++pos;
    if (pos >= source.size() || source[pos] != '(') continue;
    std::vector<std::string> params;
    std::string current;
    int depth = 0;
    for (++pos; pos < source.size(); ++pos) {
      const char c = source[pos];
      if (c == '(' || c == '[' || c == '{') ++depth;
      if (c == ')' || c == ']' || c == '}') {
        if (depth == 0) break;
        --depth;
      }
      if (c == ',' && depth == 0) {
        params.push_back(current);
        current.clear();
      } else {
        current += c;
      }
    }
    params.push_back(current);
    // Annotation and default go; "/" is a marker; "*", "*args" or "**kwargs" end the
    // positional parameters (keyword-only ones follow).
    PositionalParams positional;
    for (const std::string& param : params) {
      const std::string text = trim(param);
      const std::string name_text = trim(text.substr(0, text.find_first_of(":=")));
      if (name_text.starts_with('*')) {
        positional.variadic = name_text.size() > 1 && !name_text.starts_with("**");
        break;
      }
      if (name_text.empty() || name_text == "/") continue;
      positional.names.push_back(name_text);
      if (text.find('=') == std::string::npos) positional.required = positional.names.size();
    }
    result = std::move(positional);
  }
  return result;
}

// The reference and the baseline code are both called with the inputs in definition order, by
// position. FlashInfer-Bench does not compare names (its tests write run(a) for an input "A"),
// so only what would misplace or drop an input is an error: a parameter named like an input
// at another input's position, or a count the call cannot fill.
void check_run_signature(const Definition& def, const std::string& source, std::string_view where,
                         std::string_view field) {
  const auto params = top_level_def_params(source, "run");
  if (!params) {
    throw_input_error(where, field, "no top-level \"def run(\" found");
  }
  std::vector<std::string> inputs;
  for (const TensorSpec& spec : def.inputs) inputs.push_back(spec.name);
  for (std::size_t index = 0; index < params->names.size(); ++index) {
    const auto input = std::ranges::find(inputs, params->names[index]);
    if (input != inputs.end() && input != inputs.begin() + static_cast<std::ptrdiff_t>(index)) {
      throw_input_error(
          where, field,
          fmt::format("run() parameters ({}) must equal the input names in order ({})",
                      join(params->names), join(inputs)));
    }
  }
  if (inputs.size() < params->required ||
      (!params->variadic && inputs.size() > params->names.size())) {
    throw_input_error(
        where, field,
        fmt::format("run() takes {} positional parameters ({}), but it is called with the {} "
                    "inputs ({})",
                    params->names.size(), join(params->names), inputs.size(), join(inputs)));
  }
}

void check_reference(const Definition& def, std::string_view where) {
  check_run_signature(def, def.reference, where, "reference");
  if (!def.custom_inputs_entrypoint.empty() &&
      !top_level_def_params(def.reference, def.custom_inputs_entrypoint)) {
    throw_input_error(where, "custom_inputs_entrypoint",
                      fmt::format("the reference defines no top-level \"def {}(\"",
                                  def.custom_inputs_entrypoint));
  }
}

void check_names(const Definition& def, std::string_view where) {
  for (const TensorSpec& input : def.inputs) {
    if (def.find_axis(input.name) != nullptr) {
      throw_input_error(where, field_path("inputs", input.name),
                        "an input may not have the name of an axis");
    }
    for (const TensorSpec& output : def.outputs) {
      if (output.name == input.name) {
        throw_input_error(where, field_path("outputs", output.name),
                          "an output may not have the name of an input");
      }
    }
  }
  if (def.outputs.empty()) throw_input_error(where, "outputs", "expected at least one output");
}

DefinitionExtension parse_extension(const OrderedJson& value, const Definition& def,
                                    std::string_view where) {
  expect_object(value, where, "kernelarc");
  reject_unknown_keys(value,
                      {"op_family", "op_params", "flops", "bytes", "native_reference", "baseline",
                       "baseline_tolerance"},
                      where, "kernelarc");
  DefinitionExtension ext;
  auto text = [&](std::string_view key) {
    const OrderedJson* member = find_optional(value, key);
    return member ? expect_string(*member, where, field_path("kernelarc", key)) : std::string();
  };
  ext.op_family = text("op_family");
  ext.flops = text("flops");
  ext.bytes = text("bytes");
  ext.native_reference = text("native_reference");
  ext.baseline = text("baseline");
  if (find_optional(value, "baseline"))
    check_run_signature(def, ext.baseline, where, "kernelarc.baseline");
  if (const OrderedJson* tolerance = find_optional(value, "baseline_tolerance")) {
    if (ext.baseline.empty()) {
      throw_input_error(where, "kernelarc.baseline_tolerance",
                        "expected only beside kernelarc.baseline (it is what that code is held "
                        "to; the reference is the oracle)");
    }
    ext.baseline_tolerance = parse_tolerance(*tolerance, where, "kernelarc.baseline_tolerance");
  }
  if (const OrderedJson* params = find_optional(value, "op_params")) {
    expect_object(*params, where, "kernelarc.op_params");
    ext.op_params = *params;
  }
  if (!ext.flops.empty()) check_axis_expr(ext.flops, def, where, "kernelarc.flops");
  if (!ext.bytes.empty()) check_axis_expr(ext.bytes, def, where, "kernelarc.bytes");
  return ext;
}

std::string optional_string(const OrderedJson& json, std::string_view key, std::string_view where) {
  const OrderedJson* member = find_optional(json, key);
  return member ? expect_string(*member, where, key) : std::string();
}

// True when an identifier in the text (a Python expression) is one of the inputs.
bool names_an_input(std::string_view text, const Definition& def) {
  auto word_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (std::size_t begin = 0; begin < text.size();) {
    if (!word_char(text[begin])) {
      ++begin;
      continue;
    }
    std::size_t end = begin;
    while (end < text.size() && word_char(text[end])) ++end;
    const std::string_view word = text.substr(begin, end - begin);
    for (const TensorSpec& input : def.inputs)
      if (input.name == word) return true;
    begin = end;
  }
  return false;
}

// FlashInfer-Bench's constraints are Python expressions, and some read input data
// ("num_kv_indices == kv_indptr[-1].item()"): one that names an input is kept for readers in
// data_constraints and not evaluated, as that needs the tensors. Every other one must be an
// expression over axes, which each workload must satisfy.
void parse_constraints(const OrderedJson& list, Definition& def, std::string_view where) {
  def.constraints = expect_string_list(list, where, "constraints");
  for (std::size_t index = 0; index < def.constraints.size(); ++index) {
    const std::string& constraint = def.constraints[index];
    if (names_an_input(constraint, def)) {
      def.data_constraints.push_back(constraint);
    } else {
      check_axis_expr(constraint, def, where, field_index("constraints", index));
    }
  }
}

}  // namespace

std::optional<int64_t> literal_size(std::string_view shape_entry) {
  if (shape_entry.empty()) return std::nullopt;
  for (const char c : shape_entry)
    if (c < '0' || c > '9') return std::nullopt;
  int64_t value = 0;
  const auto [end, error] =
      std::from_chars(shape_entry.data(), shape_entry.data() + shape_entry.size(), value);
  if (error != std::errc() || end != shape_entry.data() + shape_entry.size()) return std::nullopt;
  return value;
}

const Axis* Definition::find_axis(std::string_view axis_name) const {
  for (const Axis& axis : axes) {
    if (axis.name == axis_name) return &axis;
  }
  return nullptr;
}

Definition parse_definition(const OrderedJson& json, const std::string& where) {
  expect_object(json, where, "");
  Definition def;
  def.raw = json;
  def.name = expect_string(require_member(json, "name", where, ""), where, "name");
  if (def.name.empty()) throw_input_error(where, "name", "expected a non-empty string");
  def.op_type = optional_string(json, "op_type", where);
  def.description = optional_string(json, "description", where);

  const OrderedJson& axes = require_member(json, "axes", where, "");
  expect_object(axes, where, "axes");
  for (const auto& [name, value] : axes.items()) def.axes.push_back(parse_axis(name, value, where));
  check_axis_cycles(def, where);

  def.inputs = parse_tensors(json, "inputs", def, where);
  def.outputs = parse_tensors(json, "outputs", def, where);
  check_names(def, where);

  def.reference = expect_string(require_member(json, "reference", where, ""), where, "reference");
  def.custom_inputs_entrypoint = optional_string(json, "custom_inputs_entrypoint", where);
  check_reference(def, where);

  if (const OrderedJson* constraints = find_optional(json, "constraints")) {
    parse_constraints(*constraints, def, where);
  }
  if (const OrderedJson* ext = find_optional(json, "kernelarc")) {
    def.ext = parse_extension(*ext, def, where);
  }
  return def;
}

Definition load_definition(const std::filesystem::path& path) {
  const std::string where = path.string();
  Definition def = parse_definition(parse_json_text(read_text_file(path), where), where);
  def.path = path;
  return def;
}

}  // namespace kernelarc
