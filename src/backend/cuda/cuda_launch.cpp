#include "backend/cuda/cuda_launch.h"

#include <cctype>
#include <set>

#include "core/error.h"

namespace kernelarc {
namespace {

using Json = nlohmann::json;

constexpr const char* kPlanFormat = "kernelarc.launch_plan.v1";

// An expression as text: integers (>= 0) are written out, strings are kept.
std::optional<std::string> expression_text(const OrderedJson& value, const std::string& field,
                                           std::string& text) {
  if (value.is_number_unsigned()) {
    text = std::to_string(value.get<uint64_t>());
    return std::nullopt;
  }
  if (value.is_string() && !value.get<std::string>().empty()) {
    text = value.get<std::string>();
    return std::nullopt;
  }
  return field + ": expected an integer >= 0 or an expression string, got " + value.dump();
}

std::optional<std::string> dims_text(const OrderedJson& value, const std::string& field,
                                     std::array<std::string, 3>& dims) {
  if (!value.is_array() || value.empty() || value.size() > 3) {
    return field + ": expected an array of 1 to 3 expressions, got " + value.dump();
  }
  dims = {"1", "1", "1"};
  for (std::size_t index = 0; index < value.size(); ++index) {
    const std::string entry = field + "[" + std::to_string(index) + "]";
    if (auto error = expression_text(value[index], entry, dims[index])) return error;
  }
  return std::nullopt;
}

std::string_view axis_kind_name(AxisKind kind) {
  switch (kind) {
    case AxisKind::Const:
      return "const";
    case AxisKind::Var:
      return "var";
    case AxisKind::Expr:
      return "expr";
  }
  return "var";
}

AxisKind axis_kind_from_name(const std::string& name, const std::string& where) {
  if (name == "const") return AxisKind::Const;
  if (name == "var") return AxisKind::Var;
  if (name == "expr") return AxisKind::Expr;
  throw InputError(where + ": axes: unknown axis kind \"" + name + "\"");
}

Json shapes_to_json(const std::vector<std::optional<std::vector<std::string>>>& shapes) {
  Json list = Json::array();
  for (const auto& shape : shapes) list.push_back(shape ? Json(*shape) : Json(nullptr));
  return list;
}

std::vector<std::optional<std::vector<std::string>>> shapes_from_json(const Json& list) {
  std::vector<std::optional<std::vector<std::string>>> shapes;
  for (const Json& shape : list) {
    if (shape.is_null()) {
      shapes.emplace_back(std::nullopt);
    } else {
      shapes.emplace_back(shape.get<std::vector<std::string>>());
    }
  }
  return shapes;
}

// Every expression of the spec with the field it came from.
std::vector<std::pair<std::string, std::string>> spec_expressions(const LaunchSpec& spec) {
  std::vector<std::pair<std::string, std::string>> expressions;
  for (int d = 0; d < 3; ++d) {
    expressions.emplace_back("launch.grid[" + std::to_string(d) + "]", spec.grid[d]);
    expressions.emplace_back("launch.block[" + std::to_string(d) + "]", spec.block[d]);
    if (spec.cluster) {
      expressions.emplace_back("launch.cluster[" + std::to_string(d) + "]", (*spec.cluster)[d]);
    }
  }
  expressions.emplace_back("launch.shared_bytes", spec.shared_bytes);
  return expressions;
}

}  // namespace

std::optional<std::string> parse_launch_spec(const OrderedJson& ext,
                                             const std::string& default_kernel, LaunchSpec& spec,
                                             std::map<std::string, int64_t>& knobs) {
  const auto launch = ext.find("launch");
  if (launch == ext.end() || !launch->is_object()) {
    return std::string("kernelarc.launch: expected an object");
  }
  spec = LaunchSpec{};
  spec.kernel = default_kernel;
  if (auto kernel = launch->find("kernel"); kernel != launch->end()) {
    if (!kernel->is_string() || kernel->get<std::string>().empty()) {
      return "kernelarc.launch.kernel: expected a kernel name, got " + kernel->dump();
    }
    spec.kernel = kernel->get<std::string>();
  }
  if (spec.kernel.empty()) return std::string("kernelarc.launch.kernel: missing kernel name");
  for (const auto& [key, dims] : {std::pair{"grid", &spec.grid}, std::pair{"block", &spec.block}}) {
    const std::string field = std::string("kernelarc.launch.") + key;
    auto member = launch->find(key);
    if (member == launch->end()) return field + ": missing required field";
    if (auto error = dims_text(*member, field, *dims)) return error;
  }
  if (auto shared = launch->find("shared_bytes"); shared != launch->end()) {
    if (auto error = expression_text(*shared, "kernelarc.launch.shared_bytes", spec.shared_bytes)) {
      return error;
    }
  }
  if (auto cluster = launch->find("cluster"); cluster != launch->end()) {
    spec.cluster.emplace();
    if (auto error = dims_text(*cluster, "kernelarc.launch.cluster", *spec.cluster)) return error;
  }
  return parse_knobs(ext, knobs);
}

std::optional<std::string> make_launch_plan(const LaunchSpec& spec,
                                            const std::map<std::string, int64_t>& knobs,
                                            const Definition& definition, LaunchPlan& plan) {
  std::set<std::string, std::less<>> names;
  for (const Axis& axis : definition.axes) names.insert(axis.name);
  for (const auto& [knob, value] : knobs) {
    if (names.contains(knob)) return "kernelarc.knobs." + knob + ": the name of an axis";
    names.insert(knob);
  }
  for (const auto& [field, expression] : spec_expressions(spec)) {
    try {
      for (const std::string& variable : expr_variables(expression)) {
        if (!names.contains(variable)) {
          return "kernelarc." + field + ": \"" + expression + "\": '" + variable +
                 "' is neither an axis of " + definition.name + " nor a knob";
        }
      }
    } catch (const ExprError& error) {
      return "kernelarc." + field + ": \"" + expression + "\": " + error.what();
    }
  }
  plan = LaunchPlan{};
  std::set<std::string, std::less<>> in_shapes;
  for (const auto* specs : {&definition.inputs, &definition.outputs}) {
    auto& shapes = specs == &definition.inputs ? plan.input_shapes : plan.output_shapes;
    for (const TensorSpec& tensor : *specs) {
      shapes.push_back(tensor.shape);
      if (tensor.shape) in_shapes.insert(tensor.shape->begin(), tensor.shape->end());
    }
  }
  for (const Axis& axis : definition.axes) {
    if (axis.kind == AxisKind::Var && !in_shapes.contains(axis.name)) {
      return "kernelarc.launch: var axis '" + axis.name +
             "' is in no input or output shape, so a device-only kernel cannot be given it";
    }
  }
  plan.spec = spec;
  plan.knobs = knobs;
  plan.axes = definition.axes;
  return std::nullopt;
}

nlohmann::json LaunchPlan::to_json() const {
  Json axes_json = Json::array();
  for (const Axis& axis : axes) {
    Json entry = {{"name", axis.name}, {"kind", axis_kind_name(axis.kind)}};
    if (axis.kind == AxisKind::Const) entry["value"] = axis.value;
    if (axis.kind == AxisKind::Expr) entry["expression"] = axis.expression;
    axes_json.push_back(std::move(entry));
  }
  Json json = {{"format", kPlanFormat},
               {"cubin", cubin_file},
               {"symbol", symbol},
               {"kernel", spec.kernel},
               {"grid", spec.grid},
               {"block", spec.block},
               {"shared_bytes", spec.shared_bytes},
               {"knobs", knobs},
               {"axes", std::move(axes_json)},
               {"inputs", shapes_to_json(input_shapes)},
               {"outputs", shapes_to_json(output_shapes)}};
  if (spec.cluster) json["cluster"] = *spec.cluster;
  return json;
}

LaunchPlan LaunchPlan::from_json(const nlohmann::json& json, const std::string& where) {
  try {
    if (json.at("format").get<std::string>() != kPlanFormat) {
      throw InputError(where + ": format: expected \"" + kPlanFormat + "\", got " +
                       json.at("format").dump());
    }
    LaunchPlan plan;
    plan.cubin_file = json.at("cubin").get<std::string>();
    plan.symbol = json.at("symbol").get<std::string>();
    plan.spec.kernel = json.at("kernel").get<std::string>();
    plan.spec.grid = json.at("grid").get<std::array<std::string, 3>>();
    plan.spec.block = json.at("block").get<std::array<std::string, 3>>();
    plan.spec.shared_bytes = json.at("shared_bytes").get<std::string>();
    if (json.contains("cluster"))
      plan.spec.cluster = json["cluster"].get<std::array<std::string, 3>>();
    plan.knobs = json.at("knobs").get<std::map<std::string, int64_t>>();
    for (const Json& entry : json.at("axes")) {
      Axis axis;
      axis.name = entry.at("name").get<std::string>();
      axis.kind = axis_kind_from_name(entry.at("kind").get<std::string>(), where);
      if (axis.kind == AxisKind::Const) axis.value = entry.at("value").get<int64_t>();
      if (axis.kind == AxisKind::Expr) axis.expression = entry.at("expression").get<std::string>();
      plan.axes.push_back(std::move(axis));
    }
    plan.input_shapes = shapes_from_json(json.at("inputs"));
    plan.output_shapes = shapes_from_json(json.at("outputs"));
    return plan;
  } catch (const nlohmann::json::exception& error) {
    throw InputError(where + ": malformed launch plan: " + error.what());
  }
}

bool is_launch_plan(const std::filesystem::path& path) {
  return path.filename() == kLaunchPlanFileName;
}

LaunchResolver::LaunchResolver(LaunchPlan plan) : plan_(std::move(plan)) {
  for (const Axis& axis : plan_.axes) {
    std::vector<std::string> variables;
    if (axis.kind == AxisKind::Expr) {
      std::set<std::string> names = expr_variables(axis.expression);
      variables.assign(names.begin(), names.end());
    }
    expr_axis_variables_.push_back(std::move(variables));
  }
}

std::optional<std::string> LaunchResolver::bind_axes(const ka_tensor* inputs,
                                                     const ka_tensor* outputs,
                                                     AxisValues& values) const {
  auto bind = [&](const std::vector<std::optional<std::vector<std::string>>>& shapes,
                  const ka_tensor* tensors, const char* role) -> std::optional<std::string> {
    for (std::size_t t = 0; t < shapes.size(); ++t) {
      if (!shapes[t]) continue;
      const std::vector<std::string>& names = *shapes[t];
      if (tensors[t].ndim != static_cast<int>(names.size())) {
        return std::string(role) + " " + std::to_string(t) + " has " +
               std::to_string(tensors[t].ndim) + " dimensions, the plan expects " +
               std::to_string(names.size());
      }
      for (std::size_t d = 0; d < names.size(); ++d) {
        auto [it, inserted] = values.emplace(names[d], tensors[t].shape[d]);
        if (!inserted && it->second != tensors[t].shape[d]) {
          return "axis '" + names[d] + "' is " + std::to_string(it->second) + " and " +
                 std::to_string(tensors[t].shape[d]) + " in one call";
        }
      }
    }
    return std::nullopt;
  };
  if (auto error = bind(plan_.input_shapes, inputs, "input")) return error;
  if (auto error = bind(plan_.output_shapes, outputs, "output")) return error;
  for (const Axis& axis : plan_.axes) {
    if (axis.kind == AxisKind::Const) values[axis.name] = axis.value;
  }
  // Expr axes may use each other: evaluate those whose variables are known until none is left.
  for (std::size_t pass = 0; pass < plan_.axes.size(); ++pass) {
    bool progressed = false;
    for (std::size_t a = 0; a < plan_.axes.size(); ++a) {
      const Axis& axis = plan_.axes[a];
      if (axis.kind != AxisKind::Expr || values.contains(axis.name)) continue;
      bool ready = true;
      for (const std::string& variable : expr_axis_variables_[a])
        ready &= values.contains(variable);
      if (!ready) continue;
      try {
        values[axis.name] = evaluate_expr(axis.expression, values);
      } catch (const ExprError& error) {
        return "axis '" + axis.name + "' = " + axis.expression + ": " + error.what();
      }
      progressed = true;
    }
    if (!progressed) break;
  }
  for (const Axis& axis : plan_.axes) {
    if (!values.contains(axis.name)) return "axis '" + axis.name + "' has no value in this call";
  }
  return std::nullopt;
}

std::optional<std::string> LaunchResolver::resolve(const ka_tensor* inputs, int n_inputs,
                                                   const ka_tensor* outputs, int n_outputs,
                                                   LaunchConfig& config) {
  if (n_inputs != static_cast<int>(plan_.input_shapes.size()) ||
      n_outputs != static_cast<int>(plan_.output_shapes.size())) {
    return "expected " + std::to_string(plan_.input_shapes.size()) + " inputs and " +
           std::to_string(plan_.output_shapes.size()) + " outputs, got " +
           std::to_string(n_inputs) + " and " + std::to_string(n_outputs);
  }
  std::vector<int64_t> key;
  for (const auto& [tensors, count] :
       {std::pair{inputs, n_inputs}, std::pair{outputs, n_outputs}}) {
    for (int t = 0; t < count; ++t) {
      const int ndim = std::min(std::max(tensors[t].ndim, 0), KA_MAX_DIMS);
      key.push_back(ndim);
      key.insert(key.end(), tensors[t].shape, tensors[t].shape + ndim);
    }
  }
  if (has_last_ && key == last_key_) {
    config = last_config_;
    return std::nullopt;
  }
  AxisValues values;
  if (auto error = bind_axes(inputs, outputs, values)) return error;
  LaunchConfig fresh;
  for (const Axis& axis : plan_.axes) fresh.axis_values.push_back(values.at(axis.name));
  for (const auto& [knob, value] : plan_.knobs) values[knob] = value;
  auto evaluate = [&](const std::string& expression, const std::string& field, int64_t minimum,
                      int64_t& out) -> std::optional<std::string> {
    try {
      out = evaluate_expr(expression, values);
    } catch (const ExprError& error) {
      return field + " = " + expression + ": " + error.what();
    }
    if (out < minimum) {
      return field + " = " + expression + " gives " + std::to_string(out) + ", below " +
             std::to_string(minimum);
    }
    return std::nullopt;
  };
  for (int d = 0; d < 3; ++d) {
    const std::string index = "[" + std::to_string(d) + "]";
    if (auto e = evaluate(plan_.spec.grid[d], "grid" + index, 1, fresh.grid[d])) return e;
    if (auto e = evaluate(plan_.spec.block[d], "block" + index, 1, fresh.block[d])) return e;
  }
  if (auto e = evaluate(plan_.spec.shared_bytes, "shared_bytes", 0, fresh.shared_bytes)) return e;
  if (plan_.spec.cluster) {
    fresh.cluster.emplace();
    for (int d = 0; d < 3; ++d) {
      const std::string field = "cluster[" + std::to_string(d) + "]";
      if (auto e = evaluate((*plan_.spec.cluster)[d], field, 1, (*fresh.cluster)[d])) return e;
    }
  }
  last_key_ = std::move(key);
  last_config_ = fresh;
  has_last_ = true;
  config = std::move(fresh);
  return std::nullopt;
}

}  // namespace kernelarc
