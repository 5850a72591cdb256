// workload.jsonl, axis resolution and load_problem.
#include <algorithm>
#include <cmath>
#include <functional>

#include <fmt/format.h>

#include "core/error.h"
#include "core/json_fields.h"
#include "core/problem.h"
#include "core/tensor.h"

namespace kernelarc {
namespace {

// Every axis value: const and var first, then expr axes in dependency order (parse_definition
// has ruled out cycles), then the constraints. `where` prefixes each error.
AxisValues resolve_axes_at(const Definition& def, const AxisValues& var_values,
                           std::string_view where, std::string_view axes_field) {
  AxisValues values;
  for (const Axis& axis : def.axes) {
    if (axis.kind == AxisKind::Const) values[axis.name] = axis.value;
    if (axis.kind != AxisKind::Var) continue;
    const auto found = var_values.find(axis.name);
    const std::string field = field_path(axes_field, axis.name);
    if (found == var_values.end()) {
      throw_input_error(where, field, "missing value for var axis");
    }
    if (found->second < 0) {
      throw_input_error(where, field,
                        fmt::format("expected an integer >= 0, got {}", found->second));
    }
    values[axis.name] = found->second;
  }
  for (const std::vector<TensorSpec>* specs : {&def.inputs, &def.outputs}) {
    for (const TensorSpec& spec : *specs) {
      if (!spec.shape) continue;
      for (const std::string& entry : *spec.shape) {
        if (const auto size = literal_size(entry); size && !def.find_axis(entry)) {
          values[entry] = *size;
        }
      }
    }
  }
  std::function<int64_t(const Axis&)> resolve = [&](const Axis& axis) -> int64_t {
    if (const auto found = values.find(axis.name); found != values.end()) return found->second;
    for (const std::string& name : expr_variables(axis.expression)) resolve(*def.find_axis(name));
    const std::string field = field_path(field_path("axes", axis.name), "expression");
    int64_t value = 0;
    try {
      value = evaluate_expr(axis.expression, values);
    } catch (const ExprError& error) {
      throw_input_error(where, field, fmt::format("\"{}\": {}", axis.expression, error.what()));
    }
    if (value < 0) {
      throw_input_error(
          where, field,
          fmt::format("\"{}\" evaluates to {}; an axis must be >= 0", axis.expression, value));
    }
    values[axis.name] = value;
    return value;
  };
  for (const Axis& axis : def.axes) resolve(axis);

  for (std::size_t index = 0; index < def.constraints.size(); ++index) {
    const std::string& constraint = def.constraints[index];
    if (std::ranges::find(def.data_constraints, constraint) != def.data_constraints.end()) continue;
    const std::string field = field_index("constraints", index);
    int64_t holds = 0;
    try {
      holds = evaluate_expr(constraint, values);
    } catch (const ExprError& error) {
      throw_input_error(where, field, fmt::format("\"{}\": {}", constraint, error.what()));
    }
    if (holds == 0) {
      std::string bindings;
      for (const std::string& name : expr_variables(constraint)) {
        bindings += fmt::format("{}{}={}", bindings.empty() ? "" : ", ", name, values.at(name));
      }
      throw_input_error(where, field,
                        fmt::format("\"{}\" does not hold ({})", constraint, bindings));
    }
  }
  return values;
}

// The input kind as written, or, where "type" is absent or null, the one pydantic's union
// picks (every upstream input model defaults its "type"): "path" and "tensor_key" make a
// safetensors input, "value" a scalar, neither a random input.
std::string input_type(const OrderedJson& value, std::string_view where, const std::string& field) {
  if (const OrderedJson* type = find_optional(value, "type")) {
    return expect_string(*type, where, field_path(field, "type"));
  }
  if (find_optional(value, "path") || find_optional(value, "tensor_key")) return "safetensors";
  if (find_optional(value, "value")) return "scalar";
  return "random";
}

// Other keys of an input are ignored, as upstream ignores them.
WorkloadInput parse_input(const TensorSpec& spec, const OrderedJson& value, std::string_view where,
                          const std::string& field) {
  expect_object(value, where, field);
  const std::string type = input_type(value, where, field);
  WorkloadInput input;
  if (type == "random") {
    input.kind = InputKind::Random;
  } else if (type == "scalar") {
    if (spec.shape && !spec.shape->empty()) {
      throw_input_error(where, field_path(field, "type"),
                        "\"scalar\" needs an input of shape null or [], this one has a shape");
    }
    input.kind = InputKind::Scalar;
    const OrderedJson& scalar = require_member(value, "value", where, field);
    if (scalar.is_boolean()) {
      input.scalar_value = scalar.get<bool>() ? 1 : 0;
    } else {
      input.scalar_value = expect_number(scalar, where, field_path(field, "value"));
    }
  } else if (type == "safetensors") {
    input.kind = InputKind::Safetensors;
    input.path = expect_string(require_member(value, "path", where, field), where,
                               field_path(field, "path"));
    input.tensor_key = expect_string(require_member(value, "tensor_key", where, field), where,
                                     field_path(field, "tensor_key"));
  } else if (type == "custom") {
    input.kind = InputKind::Custom;
  } else {
    throw_input_error(
        where, field_path(field, "type"),
        fmt::format("expected \"random\", \"scalar\", \"safetensors\" or \"custom\", got \"{}\"",
                    type));
  }
  return input;
}

double non_negative(const OrderedJson& value, std::string_view where, const std::string& field) {
  const double number = expect_number(value, where, field);
  if (!(number >= 0) || std::isinf(number)) {
    throw_input_error(where, field, fmt::format("expected a finite number >= 0, got {}", number));
  }
  return number;
}

// `prefix` is "" for a bare workload and "workload" inside a trace wrapper.
Workload parse_workload(const OrderedJson& json, const Definition& def, std::string_view where,
                        const std::string& prefix) {
  expect_object(json, where, prefix);
  Workload workload;
  workload.raw = json;
  const std::string uuid_field = field_path(prefix, "uuid");
  workload.uuid = expect_string(require_member(json, "uuid", where, prefix), where, uuid_field);
  if (workload.uuid.empty()) throw_input_error(where, uuid_field, "expected a non-empty string");

  const std::string axes_field = field_path(prefix, "axes");
  const OrderedJson& axes = require_member(json, "axes", where, prefix);
  expect_object(axes, where, axes_field);
  AxisValues given;
  for (const auto& [name, value] : axes.items()) {
    const std::string field = field_path(axes_field, name);
    const Axis* axis = def.find_axis(name);
    if (axis == nullptr) {
      throw_input_error(where, field,
                        fmt::format("unknown axis (the definition \"{}\" has no "
                                    "axis \"{}\")",
                                    def.name, name));
    }
    const int64_t number = expect_int(value, where, field);
    if (number < 0) {
      throw_input_error(where, field, fmt::format("expected an integer >= 0, got {}", number));
    }
    if (axis->kind == AxisKind::Const && number != axis->value) {
      throw_input_error(
          where, field,
          fmt::format("const axis is {} in the definition, got {}", axis->value, number));
    }
    given[name] = number;
    if (axis->kind == AxisKind::Var) workload.axes[name] = number;
  }

  const std::string inputs_field = field_path(prefix, "inputs");
  const OrderedJson& inputs = require_member(json, "inputs", where, prefix);
  expect_object(inputs, where, inputs_field);
  for (const auto& [name, unused] : inputs.items()) {
    bool known = false;
    for (const TensorSpec& spec : def.inputs) known = known || spec.name == name;
    if (!known) {
      throw_input_error(
          where, field_path(inputs_field, name),
          fmt::format("unknown input (the definition \"{}\" has no input \"{}\")", def.name, name));
    }
  }
  std::size_t custom_count = 0;
  for (const TensorSpec& spec : def.inputs) {
    const std::string field = field_path(inputs_field, spec.name);
    const OrderedJson* value = find_member(inputs, spec.name);
    if (value == nullptr) throw_input_error(where, field, "missing input");
    WorkloadInput input = parse_input(spec, *value, where, field);
    if (input.kind == InputKind::Custom) {
      if (def.custom_inputs_entrypoint.empty()) {
        throw_input_error(where, field_path(field, "type"),
                          "\"custom\" needs a custom_inputs_entrypoint in the definition");
      }
      ++custom_count;
    }
    workload.inputs[spec.name] = std::move(input);
  }
  if (custom_count != 0 && custom_count != def.inputs.size()) {
    throw_input_error(where, inputs_field,
                      fmt::format("{} of {} inputs are \"custom\"; a workload with a custom input "
                                  "must make all inputs custom",
                                  custom_count, def.inputs.size()));
  }

  if (const OrderedJson* tolerance = find_optional(json, "tolerance")) {
    workload.tolerance = parse_tolerance(*tolerance, where, field_path(prefix, "tolerance"));
  }

  const AxisValues resolved = resolve_axes_at(def, workload.axes, where, axes_field);
  for (const auto& [name, number] : given) {
    if (resolved.at(name) != number) {
      throw_input_error(
          where, field_path(axes_field, name),
          fmt::format("expr axis evaluates to {}, got {}", resolved.at(name), number));
    }
  }
  return workload;
}

}  // namespace

// Other keys are ignored, as upstream ignores them.
Tolerance parse_tolerance(const OrderedJson& value, std::string_view where,
                          const std::string& field) {
  expect_object(value, where, field);
  Tolerance tolerance;
  if (const OrderedJson* atol = find_optional(value, "max_atol")) {
    tolerance.max_atol = non_negative(*atol, where, field_path(field, "max_atol"));
  }
  if (const OrderedJson* rtol = find_optional(value, "max_rtol")) {
    tolerance.max_rtol = non_negative(*rtol, where, field_path(field, "max_rtol"));
  }
  if (const OrderedJson* ratio = find_optional(value, "required_matched_ratio")) {
    const std::string ratio_field = field_path(field, "required_matched_ratio");
    tolerance.required_matched_ratio = expect_number(*ratio, where, ratio_field);
    if (!(tolerance.required_matched_ratio > 0 && tolerance.required_matched_ratio <= 1)) {
      throw_input_error(
          where, ratio_field,
          fmt::format("expected a number in (0, 1], got {}", tolerance.required_matched_ratio));
    }
  }
  if (const OrderedJson* cap = find_optional(value, "max_error_cap")) {
    tolerance.max_error_cap = non_negative(*cap, where, field_path(field, "max_error_cap"));
  }
  if (const OrderedJson* allow = find_optional(value, "allow_negative_inf")) {
    tolerance.allow_negative_inf =
        expect_bool(*allow, where, field_path(field, "allow_negative_inf"));
  }
  return tolerance;
}

std::vector<Workload> load_workloads(const std::filesystem::path& path, const Definition& def) {
  const std::string text = read_text_file(path);
  std::vector<Workload> workloads;
  std::map<std::string, int> uuid_lines;
  std::size_t line_start = 0;
  for (int line_number = 1; line_start < text.size(); ++line_number) {
    std::size_t line_end = text.find('\n', line_start);
    if (line_end == std::string::npos) line_end = text.size();
    const std::string line = text.substr(line_start, line_end - line_start);
    line_start = line_end + 1;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;

    const std::string where = fmt::format("{}:{}", path.string(), line_number);
    OrderedJson json;
    try {
      json = OrderedJson::parse(line);
    } catch (const OrderedJson::parse_error& error) {
      // The parser sees one line, so its "line 1" would only mislead.
      std::string text = json_error_text(error);
      if (const auto at = text.find("at line 1, column"); at != std::string::npos) {
        text.replace(at, std::string_view("at line 1, column").size(), "at column");
      }
      throw_input_error(where, "", "invalid JSON: " + text);
    }
    expect_object(json, where, "");
    Workload workload;
    if (const OrderedJson* wrapped = find_member(json, "workload")) {
      if (const OrderedJson* name = find_member(json, "definition");
          name && name->is_string() && name->get<std::string>() != def.name) {
        throw_input_error(
            where, "definition",
            fmt::format("expected \"{}\", got \"{}\"", def.name, name->get<std::string>()));
      }
      workload = parse_workload(*wrapped, def, where, "workload");
    } else {
      workload = parse_workload(json, def, where, "");
    }
    workload.line = line_number;
    const auto [previous, inserted] = uuid_lines.emplace(workload.uuid, line_number);
    if (!inserted) {
      throw_input_error(
          where, "uuid",
          fmt::format("duplicate \"{}\" (first on line {})", workload.uuid, previous->second));
    }
    workloads.push_back(std::move(workload));
  }
  if (workloads.empty()) throw_input_error(path.string(), "", "contains no workloads");
  return workloads;
}

Problem load_problem(const std::filesystem::path& dir) {
  if (!std::filesystem::exists(dir / "definition.json") &&
      std::filesystem::is_directory(dir / "definitions")) {
    throw_input_error(dir.string(), "",
                      "this is a FlashInfer-Bench dataset (definitions/, workloads/), not a "
                      "problem directory: `kernelarc import flashinfer " +
                          dir.string() + " OUT` makes one problem directory per definition");
  }
  Problem problem;
  problem.dir = dir;
  problem.definition = load_definition(dir / "definition.json");
  problem.workloads = load_workloads(dir / "workload.jsonl", problem.definition);
  return problem;
}

std::vector<std::string> axis_names(const Definition& def) {
  std::vector<std::string> names;
  for (const Axis& axis : def.axes) names.push_back(axis.name);
  return names;
}

AxisValues resolve_axes(const Definition& def, const Workload& workload) {
  const std::string source =
      def.path.empty() ? fmt::format("definition \"{}\"", def.name) : def.path.string();
  const std::string where =
      workload.line > 0
          ? fmt::format("{}: workload \"{}\" (line {})", source, workload.uuid, workload.line)
          : fmt::format("{}: workload \"{}\"", source, workload.uuid);
  return resolve_axes_at(def, workload.axes, where, "axes");
}

std::vector<int64_t> resolve_shape(const TensorSpec& spec, const AxisValues& axes) {
  std::vector<int64_t> shape;
  if (!spec.shape) return shape;
  for (const std::string& name : *spec.shape) {
    const auto found = axes.find(name);
    if (found == axes.end()) {
      throw InputError(fmt::format("{}: axis \"{}\" has no value", spec.name, name));
    }
    shape.push_back(found->second);
  }
  return shape;
}

double tensor_bytes(const Definition& def, const AxisValues& axes) {
  double bytes = 0;
  auto add = [&](const TensorSpec& spec) {
    bytes += static_cast<double>(shape_numel(resolve_shape(spec, axes))) *
             static_cast<double>(dtype_size(spec.dtype));
  };
  std::for_each(def.inputs.begin(), def.inputs.end(), add);
  std::for_each(def.outputs.begin(), def.outputs.end(), add);
  return bytes;
}

const Workload* find_workload(const Problem& problem, std::string_view uuid) {
  for (const Workload& workload : problem.workloads)
    if (workload.uuid == uuid) return &workload;
  return nullptr;
}

}  // namespace kernelarc
