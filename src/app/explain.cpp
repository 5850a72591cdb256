#include "app/explain.h"

#include <fmt/format.h>

namespace kernelarc {

namespace {

std::string sizes_text(const std::vector<SymSize>& sizes) {
  std::vector<std::string> parts;
  for (const SymSize& size : sizes) parts.push_back(size.text());
  return fmt::format("[{}]", fmt::join(parts, ", "));
}

std::string value_type(const GraphValue& value) {
  return value.dtype_name + sizes_text(value.shape);
}

/// The name a value's storage goes by: the input's, the producing node's result, a constant.
std::string storage_name(const OpGraph& graph, int64_t value_id) {
  const GraphBuffer& buffer = graph.buffer_of(value_id);
  switch (buffer.source) {
    case GraphBuffer::Source::Input:
      return buffer.input;
    case GraphBuffer::Source::Constant:
      return fmt::format("constant{}", fmt::join(buffer.shape, "x"));
    case GraphBuffer::Source::Node:
      break;
  }
  return fmt::format("%{}", value_id);
}

std::string operand_text(const OpGraph& graph, int64_t value_id) {
  const int64_t root = graph.follow_views(value_id);
  const std::string name = storage_name(graph, root);
  if (root == value_id) return name;
  return name + ".view" + sizes_text(graph.value(value_id).shape);
}

std::string arg_text(const OpGraph& graph, const GraphArg& arg) {
  switch (arg.kind) {
    case GraphArg::Kind::Value:
      return operand_text(graph, arg.value);
    case GraphArg::Kind::Float:
      return fmt::format("{}", arg.number);
    case GraphArg::Kind::Int:
      return arg.integer.text();
    case GraphArg::Kind::Bool:
      return arg.flag ? "True" : "False";
    case GraphArg::Kind::String:
      return "\"" + arg.text + "\"";
    case GraphArg::Kind::List: {
      std::vector<std::string> items;
      for (const GraphArg& item : arg.items) items.push_back(arg_text(graph, item));
      return fmt::format("[{}]", fmt::join(items, ", "));
    }
    case GraphArg::Kind::None:
      return "None";
    case GraphArg::Kind::DType:
    case GraphArg::Kind::Input:
    case GraphArg::Kind::Device:
    case GraphArg::Kind::Other:
      break;
  }
  return arg.text;
}

std::string sizes_text(const OrderedJson& sizes) {
  std::vector<std::string> parts;
  for (const OrderedJson& size : sizes) parts.push_back(size.get<std::string>());
  return fmt::format("[{}]", fmt::join(parts, ", "));
}

std::string kernel_shape_text(const OrderedJson& kernel) {
  const std::string kind = kernel.value("kind", std::string("?"));
  const OrderedJson none = OrderedJson::array();
  if (kind == "pointwise") return "pointwise over " + sizes_text(kernel.value("domain", none));
  if (kind == "reduce")
    return fmt::format("reduce over {} for each of {}", sizes_text(kernel.value("reduce", none)),
                       sizes_text(kernel.value("domain", none)));
  if (kind == "scan")
    return fmt::format("scan ({}{}{}) along dim {} of {}", kernel.value("op", std::string("?")),
                       kernel.value("reverse", false) ? ", reverse" : "",
                       kernel.value("exclusive", false) ? ", exclusive" : "",
                       kernel.value("axis", 0), sizes_text(kernel.value("domain", none)));
  if (kind == "scatter")
    return fmt::format("scatter{} over {}",
                       kernel.value("accumulate", false) ? " (accumulate)" : "",
                       sizes_text(kernel.value("domain", none)));
  if (kind == "topk")
    return fmt::format("topk k={} of {} ({}) over {}", kernel.value("k", std::string("?")),
                       kernel.value("extent", std::string("?")),
                       kernel.value("largest", true) ? "largest" : "smallest",
                       sizes_text(kernel.value("domain", none)));
  if (kind == "matmul")
    return fmt::format("matmul m={} n={} k={} batch {}", kernel.value("m", std::string("?")),
                       kernel.value("n", std::string("?")), kernel.value("k", std::string("?")),
                       sizes_text(kernel.value("batch", none)));
  return kind;
}

std::string stores_text(const OrderedJson& kernel) {
  std::vector<std::string> stores;
  for (const OrderedJson& store : kernel.value("stores", OrderedJson::array())) {
    std::string text = store.value("buffer", std::string("?"));
    if (store.contains("over")) text += " (" + store.at("over").get<std::string>() + ")";
    stores.push_back(std::move(text));
  }
  return fmt::format("{}", fmt::join(stores, ", "));
}

}  // namespace

std::vector<std::string> graph_lines(const OpGraph& graph) {
  std::vector<std::string> lines;
  for (const GraphNode& node : graph.nodes) {
    if (node.view) continue;
    std::vector<std::string> args;
    for (const GraphArg& arg : node.args) args.push_back(arg_text(graph, arg));
    for (const auto& [name, arg] : node.kwargs)
      if (!arg.is_none()) args.push_back(name + "=" + arg_text(graph, arg));
    std::vector<std::string> results, types;
    for (const int64_t output : node.outputs) {
      if (output < 0) continue;
      results.push_back(fmt::format("%{}", output));
      types.push_back(value_type(graph.value(output)));
    }
    lines.push_back(fmt::format("{} = {}({}) -> {}", fmt::join(results, ", "), node.op,
                                fmt::join(args, ", "), fmt::join(types, ", ")));
  }
  for (const GraphOutput& output : graph.outputs)
    lines.push_back(fmt::format("{} = {}", output.name, operand_text(graph, output.value)));
  return lines;
}

std::vector<std::string> plan_lines(const OrderedJson& plan) {
  std::vector<std::string> lines;
  std::vector<std::string> temps;
  for (const OrderedJson& buffer : plan.value("buffers", OrderedJson::array()))
    if (buffer.value("kind", std::string()) == "temp")
      temps.push_back(fmt::format("{} ({}[{}])", buffer.value("name", std::string("?")),
                                  buffer.value("dtype", std::string("?")),
                                  buffer.value("elements", std::string("?"))));
  lines.push_back(temps.empty() ? "temps: none" : fmt::format("temps: {}", fmt::join(temps, ", ")));
  std::size_t index = 0;
  for (const OrderedJson& kernel : plan.value("kernels", OrderedJson::array())) {
    std::string line = fmt::format("kernel {}: {}", index++, kernel_shape_text(kernel));
    std::vector<std::string> stages;
    for (const OrderedJson& stage : kernel.value("stages", OrderedJson::array()))
      stages.push_back(fmt::format("{} = {}", stage.value("name", std::string("?")),
                                   stage.value("op", std::string("?"))));
    if (!stages.empty()) line += fmt::format("; stages {}", fmt::join(stages, ", "));
    std::vector<std::string> loads;
    for (const char* operand : {"a", "b"})
      if (kernel.contains(operand))
        loads.push_back(kernel.at(operand).value("buffer", std::string("?")));
    const OrderedJson kernel_loads = kernel.value("loads", OrderedJson::object());
    for (const OrderedJson& load : kernel_loads)
      loads.push_back(load.value("buffer", std::string("?")));
    if (!loads.empty()) line += fmt::format("; loads {}", fmt::join(loads, ", "));
    line += "; stores " + stores_text(kernel);
    lines.push_back(std::move(line));
  }
  return lines;
}

OrderedJson recognition_json(const Recognition& r) {
  return {{"source", source_name(r.source)},
          {"family", r.family},
          {"op_params", r.op_params},
          {"summary", r.summary},
          {"reason", r.reason},
          {"notes", r.notes},
          {"bytes", r.bytes},
          {"flops", r.flops}};
}

}  // namespace kernelarc
