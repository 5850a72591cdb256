// definition.json: parsing and the cross-field checks (axes, shapes, run() signature, ...).
#include <cctype>
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

Axis parse_axis(const std::string& name, const OrderedJson& value, std::string_view where) {
  const std::string field = field_path("axes", name);
  expect_object(value, where, field);
  Axis axis;
  axis.name = name;
  const std::string type =
      expect_string(require_member(value, "type", where, field), where, field_path(field, "type"));
  if (type == "const") {
    reject_unknown_keys(value, {"type", "value", "description"}, where, field);
    axis.kind = AxisKind::Const;
    axis.value =
        expect_int(require_member(value, "value", where, field), where, field_path(field, "value"));
    if (axis.value < 0) {
      throw_input_error(where, field_path(field, "value"),
                        fmt::format("expected an integer >= 0, got {}", axis.value));
    }
  } else if (type == "var") {
    reject_unknown_keys(value, {"type", "description"}, where, field);
    axis.kind = AxisKind::Var;
  } else if (type == "expr") {
    reject_unknown_keys(value, {"type", "expression", "description"}, where, field);
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
    reject_unknown_keys(value, {"shape", "dtype", "description"}, where, field);
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
        if (def.find_axis(axis) == nullptr) {
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
    if (const OrderedJson* description = find_member(value, "description")) {
      spec.description = expect_string(*description, where, field_path(field, "description"));
    }
    specs.push_back(std::move(spec));
  }
  return specs;
}

// Finds the parameter list of the last top-level `def <name>(...)` in Python source; nullopt
// when there is none. A scan, not a parser: enough to catch a signature that does not match.
std::optional<std::vector<std::string>> top_level_def_params(const std::string& source,
                                                             std::string_view name) {
  std::optional<std::vector<std::string>> result;
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
    std::vector<std::string> names;
    for (const std::string& param : params) {
      std::string text = trim(param);
      // Annotation and default go; "/" and a bare "*" are markers, not parameters.
      text = trim(text.substr(0, text.find_first_of(":=")));
      if (text.empty() || text == "/" || text == "*") continue;
      names.push_back(text);
    }
    result = std::move(names);
  }
  return result;
}

// The reference and the baseline code are both called with the inputs in definition order.
void check_run_signature(const Definition& def, const std::string& source, std::string_view where,
                         std::string_view field) {
  const auto params = top_level_def_params(source, "run");
  if (!params) {
    throw_input_error(where, field, "no top-level \"def run(\" found");
  }
  std::vector<std::string> inputs;
  for (const TensorSpec& spec : def.inputs) inputs.push_back(spec.name);
  if (*params != inputs) {
    throw_input_error(where, field,
                      fmt::format("run() parameters ({}) must equal the input names in order ({})",
                                  join(*params), join(inputs)));
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
                      {"op_family", "op_params", "flops", "bytes", "native_reference", "baseline"},
                      where, "kernelarc");
  DefinitionExtension ext;
  auto text = [&](std::string_view key) {
    const OrderedJson* member = find_member(value, key);
    return member ? expect_string(*member, where, field_path("kernelarc", key)) : std::string();
  };
  ext.op_family = text("op_family");
  ext.flops = text("flops");
  ext.bytes = text("bytes");
  ext.native_reference = text("native_reference");
  ext.baseline = text("baseline");
  if (find_member(value, "baseline"))
    check_run_signature(def, ext.baseline, where, "kernelarc.baseline");
  if (const OrderedJson* params = find_member(value, "op_params")) {
    expect_object(*params, where, "kernelarc.op_params");
    ext.op_params = *params;
  }
  if (!ext.flops.empty()) check_axis_expr(ext.flops, def, where, "kernelarc.flops");
  if (!ext.bytes.empty()) check_axis_expr(ext.bytes, def, where, "kernelarc.bytes");
  return ext;
}

std::string optional_string(const OrderedJson& json, std::string_view key, std::string_view where) {
  const OrderedJson* member = find_member(json, key);
  return member ? expect_string(*member, where, key) : std::string();
}

}  // namespace

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

  if (const OrderedJson* constraints = find_member(json, "constraints")) {
    def.constraints = expect_string_list(*constraints, where, "constraints");
    for (std::size_t index = 0; index < def.constraints.size(); ++index) {
      check_axis_expr(def.constraints[index], def, where, field_index("constraints", index));
    }
  }
  if (const OrderedJson* ext = find_member(json, "kernelarc")) {
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
