#include "lower/op_graph.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "core/error.h"
#include "lower/functionalize.h"

namespace kernelarc {
namespace {

struct Parser {
  std::string_view where;

  [[noreturn]] void fail(std::string_view path, std::string_view problem) const {
    throw_input_error(where, path, problem);
  }

  const OrderedJson& member(const OrderedJson& object, std::string_view key,
                            std::string_view parent) const {
    return require_member(object, key, where, parent);
  }

  SymSize size(const OrderedJson& json, std::string_view path) const {
    if (json.is_number_integer()) return SymSize::constant(json.get<int64_t>());
    if (!json.is_string())
      fail(path, "expected an integer expression string, got " + describe_json(json));
    return SymSize::parse(json.get<std::string>());
  }

  std::vector<SymSize> sizes(const OrderedJson& json, std::string_view path) const {
    if (!json.is_array()) fail(path, "expected an array, got " + describe_json(json));
    std::vector<SymSize> result;
    for (std::size_t i = 0; i < json.size(); ++i)
      result.push_back(size(json[i], field_index(path, i)));
    return result;
  }

  double float_value(const OrderedJson& json, std::string_view path) const {
    if (json.is_number()) return json.get<double>();
    if (json.is_string()) {
      const auto text = json.get<std::string>();
      if (text == "inf") return std::numeric_limits<double>::infinity();
      if (text == "-inf") return -std::numeric_limits<double>::infinity();
      if (text == "nan") return std::numeric_limits<double>::quiet_NaN();
    }
    fail(path, "expected a number or \"inf\", \"-inf\", \"nan\", got " + describe_json(json));
  }

  GraphArg arg(const OrderedJson& json, std::string_view path) const {
    expect_object(json, where, path);
    if (json.size() != 1) fail(path, "expected an object with exactly one key, got " + json.dump());
    const std::string key = json.begin().key();  // items().begin() would dangle
    const OrderedJson& content = json.begin().value();
    const std::string inner = field_path(path, key);
    GraphArg arg;
    if (key == "value") {
      arg.kind = GraphArg::Kind::Value;
      arg.value = expect_int(content, where, inner);
    } else if (key == "float") {
      arg.kind = GraphArg::Kind::Float;
      arg.number = float_value(content, inner);
    } else if (key == "int") {
      arg.kind = GraphArg::Kind::Int;
      arg.integer = size(content, inner);
    } else if (key == "bool") {
      arg.kind = GraphArg::Kind::Bool;
      arg.flag = expect_bool(content, where, inner);
    } else if (key == "dtype" || key == "string" || key == "input" || key == "device" ||
               key == "other") {
      arg.kind = key == "dtype"    ? GraphArg::Kind::DType
                 : key == "string" ? GraphArg::Kind::String
                 : key == "input"  ? GraphArg::Kind::Input
                 : key == "device" ? GraphArg::Kind::Device
                                   : GraphArg::Kind::Other;
      arg.text = expect_string(content, where, inner);
    } else if (key == "list") {
      arg.kind = GraphArg::Kind::List;
      if (!content.is_array()) fail(inner, "expected an array, got " + describe_json(content));
      for (std::size_t i = 0; i < content.size(); ++i) {
        arg.items.push_back(this->arg(content[i], field_index(inner, i)));
      }
    } else if (key == "none") {
      arg.kind = GraphArg::Kind::None;
    } else {
      fail(path, fmt::format("unknown argument kind \"{}\" (expected value, float, int, bool, "
                             "dtype, string, list, none, input, device or other)",
                             key));
    }
    return arg;
  }

  GraphValue value(const OrderedJson& json, std::string_view path, std::size_t index) const {
    expect_object(json, where, path);
    GraphValue value;
    value.id = expect_int(member(json, "id", path), where, field_path(path, "id"));
    if (value.id != static_cast<int64_t>(index)) {
      fail(field_path(path, "id"), fmt::format("expected {} (ids are dense and in order)", index));
    }
    value.dtype_name = expect_string(member(json, "dtype", path), where, field_path(path, "dtype"));
    value.dtype = dtype_from_name(value.dtype_name);
    value.shape = sizes(member(json, "shape", path), field_path(path, "shape"));
    value.stride = sizes(member(json, "stride", path), field_path(path, "stride"));
    if (value.stride.size() != value.shape.size()) {
      fail(field_path(path, "stride"),
           fmt::format("expected {} strides (one per dimension), got {}", value.shape.size(),
                       value.stride.size()));
    }
    value.offset = size(member(json, "offset", path), field_path(path, "offset"));
    value.buffer = expect_int(member(json, "buffer", path), where, field_path(path, "buffer"));
    return value;
  }

  GraphBuffer buffer(const OrderedJson& json, std::string_view path, std::size_t index) const {
    expect_object(json, where, path);
    GraphBuffer buffer;
    buffer.id = expect_int(member(json, "id", path), where, field_path(path, "id"));
    if (buffer.id != static_cast<int64_t>(index)) {
      fail(field_path(path, "id"), fmt::format("expected {} (ids are dense and in order)", index));
    }
    const auto source =
        expect_string(member(json, "source", path), where, field_path(path, "source"));
    if (source == "input") {
      buffer.source = GraphBuffer::Source::Input;
      buffer.input = expect_string(member(json, "input", path), where, field_path(path, "input"));
    } else if (source == "node") {
      buffer.source = GraphBuffer::Source::Node;
      buffer.node = expect_int(member(json, "node", path), where, field_path(path, "node"));
    } else if (source == "constant") {
      buffer.source = GraphBuffer::Source::Constant;
      buffer.dtype_name =
          expect_string(member(json, "dtype", path), where, field_path(path, "dtype"));
      buffer.dtype = dtype_from_name(buffer.dtype_name);
      const auto& shape = member(json, "shape", path);
      if (!shape.is_array()) fail(field_path(path, "shape"), "expected an array of integers");
      int64_t elements = 1;
      for (std::size_t i = 0; i < shape.size(); ++i) {
        buffer.shape.push_back(
            expect_int(shape[i], where, field_index(field_path(path, "shape"), i)));
        elements *= buffer.shape.back();
      }
      const auto& data = member(json, "data", path);
      if (!data.is_array() || static_cast<int64_t>(data.size()) != elements) {
        fail(field_path(path, "data"), fmt::format("expected an array of {} numbers", elements));
      }
      for (std::size_t i = 0; i < data.size(); ++i) {
        buffer.data.push_back(data[i].is_boolean()
                                  ? (data[i].get<bool>() ? 1.0 : 0.0)
                                  : float_value(data[i], field_index(field_path(path, "data"), i)));
      }
    } else {
      fail(field_path(path, "source"),
           "expected \"input\", \"node\" or \"constant\", got " + describe_json(json["source"]));
    }
    return buffer;
  }

  GraphNode node(const OrderedJson& json, std::string_view path, std::size_t index) const {
    expect_object(json, where, path);
    GraphNode node;
    node.id = expect_int(member(json, "id", path), where, field_path(path, "id"));
    if (node.id != static_cast<int64_t>(index)) {
      fail(field_path(path, "id"), fmt::format("expected {} (ids are dense and in order)", index));
    }
    node.op = expect_string(member(json, "op", path), where, field_path(path, "op"));
    if (const auto* view = find_member(json, "view")) {
      node.view = expect_bool(*view, where, field_path(path, "view"));
    }
    if (const auto* args = find_member(json, "args")) {
      if (!args->is_array()) fail(field_path(path, "args"), "expected an array");
      for (std::size_t i = 0; i < args->size(); ++i) {
        node.args.push_back(arg((*args)[i], field_index(field_path(path, "args"), i)));
      }
    }
    if (const auto* kwargs = find_member(json, "kwargs")) {
      expect_object(*kwargs, where, field_path(path, "kwargs"));
      for (const auto& [key, content] : kwargs->items()) {
        node.kwargs.emplace_back(key, arg(content, field_path(field_path(path, "kwargs"), key)));
      }
    }
    const auto& outputs = member(json, "outputs", path);
    if (!outputs.is_array()) fail(field_path(path, "outputs"), "expected an array of value ids");
    for (std::size_t i = 0; i < outputs.size(); ++i) {
      node.outputs.push_back(
          outputs[i].is_null()
              ? -1
              : expect_int(outputs[i], where, field_index(field_path(path, "outputs"), i)));
    }
    return node;
  }
};

void check_value_id(const Parser& parser, const OpGraph& graph, int64_t id, std::string_view path) {
  if (id < 0 || id >= static_cast<int64_t>(graph.values.size())) {
    parser.fail(path, fmt::format("value {} does not exist ({} values)", id, graph.values.size()));
  }
}

void check_arg_ids(const Parser& parser, const OpGraph& graph, const GraphArg& arg,
                   std::string_view path) {
  if (arg.kind == GraphArg::Kind::Value) check_value_id(parser, graph, arg.value, path);
  if (arg.kind == GraphArg::Kind::Input && !graph.find_input(arg.text)) {
    parser.fail(path, fmt::format("unknown input \"{}\"", arg.text));
  }
  for (std::size_t i = 0; i < arg.items.size(); ++i) {
    check_arg_ids(parser, graph, arg.items[i], field_index(path, i));
  }
}

void collect_value_args(const GraphArg& arg, std::vector<int64_t>& ids) {
  if (arg.kind == GraphArg::Kind::Value) ids.push_back(arg.value);
  for (const auto& item : arg.items) collect_value_args(item, ids);
}

bool is_cast_op(std::string_view name) {
  return name == "_to_copy" || name == "to" || name == "clone" || name == "contiguous" ||
         name == "copy" || name == "alias" || name == "lift_fresh" || name == "detach";
}

}  // namespace

std::optional<int64_t> GraphArg::as_value() const {
  if (kind != Kind::Value) return std::nullopt;
  return value;
}

std::optional<double> GraphArg::as_float() const {
  if (kind == Kind::Float) return number;
  if (kind == Kind::Int && integer.is_constant()) return static_cast<double>(integer.coefficient());
  if (kind == Kind::Bool) return flag ? 1.0 : 0.0;
  return std::nullopt;
}

std::optional<SymSize> GraphArg::as_int_expr() const {
  if (kind != Kind::Int) return std::nullopt;
  return integer;
}

std::optional<int64_t> GraphArg::as_int() const {
  if (kind != Kind::Int || !integer.is_constant()) return std::nullopt;
  return integer.coefficient();
}

std::optional<bool> GraphArg::as_bool() const {
  if (kind != Kind::Bool) return std::nullopt;
  return flag;
}

std::optional<std::vector<int64_t>> GraphArg::as_int_list() const {
  if (const auto single = as_int()) return std::vector<int64_t>{*single};
  if (kind != Kind::List) return std::nullopt;
  std::vector<int64_t> result;
  for (const auto& item : items) {
    const auto integer = item.as_int();
    if (!integer) return std::nullopt;
    result.push_back(*integer);
  }
  return result;
}

std::optional<std::vector<SymSize>> GraphArg::as_int_expr_list() const {
  if (kind == Kind::Int) return std::vector<SymSize>{integer};
  if (kind != Kind::List) return std::nullopt;
  std::vector<SymSize> result;
  for (const auto& item : items) {
    if (item.kind != Kind::Int) return std::nullopt;
    result.push_back(item.integer);
  }
  return result;
}

std::optional<std::vector<int64_t>> GraphArg::as_value_list() const {
  if (kind != Kind::List) return std::nullopt;
  std::vector<int64_t> result;
  for (const auto& item : items) {
    if (item.kind != Kind::Value) return std::nullopt;
    result.push_back(item.value);
  }
  return result;
}

std::optional<DType> GraphArg::as_dtype() const {
  if (kind != Kind::DType) return std::nullopt;
  return dtype_from_name(text);
}

std::optional<std::string> GraphArg::as_string() const {
  if (kind != Kind::String) return std::nullopt;
  return text;
}

std::string_view GraphNode::base_name() const {
  std::string_view name = op;
  if (const auto dot = name.find('.'); dot != std::string_view::npos) name.remove_prefix(dot + 1);
  if (const auto dot = name.find('.'); dot != std::string_view::npos) name = name.substr(0, dot);
  return name;
}

std::string_view GraphNode::overload() const {
  std::string_view name = op;
  const auto first = name.find('.');
  if (first == std::string_view::npos) return {};
  const auto second = name.find('.', first + 1);
  if (second == std::string_view::npos) return {};
  return name.substr(second + 1);
}

const GraphArg* GraphNode::kwarg(std::string_view name) const {
  for (const auto& [key, arg] : kwargs) {
    if (key == name) return &arg;
  }
  return nullptr;
}

const GraphArg* GraphNode::arg(std::size_t position, std::string_view name) const {
  if (position < args.size()) return &args[position];
  if (name.empty()) return nullptr;
  return kwarg(name);
}

const GraphNode* OpGraph::producer(int64_t value_id) const {
  if (value_id < 0 || value_id >= static_cast<int64_t>(producer_of_.size())) return nullptr;
  const int64_t node_id = producer_of_[static_cast<std::size_t>(value_id)];
  return node_id < 0 ? nullptr : &node(node_id);
}

std::vector<const GraphNode*> OpGraph::users(int64_t value_id) const {
  std::vector<const GraphNode*> result;
  for (const auto& node : nodes) {
    std::vector<int64_t> ids;
    for (const auto& arg : node.args) collect_value_args(arg, ids);
    for (const auto& [key, arg] : node.kwargs) collect_value_args(arg, ids);
    if (std::find(ids.begin(), ids.end(), value_id) != ids.end()) result.push_back(&node);
  }
  return result;
}

std::vector<std::string> OpGraph::output_names(int64_t value_id) const {
  std::vector<std::string> names;
  for (const auto& output : outputs) {
    if (output.value == value_id) names.push_back(output.name);
  }
  return names;
}

const GraphInput* OpGraph::input_of_value(int64_t value_id) const {
  for (const auto& input : inputs) {
    if (!input.is_scalar() && input.value == value_id) return &input;
  }
  return nullptr;
}

const GraphInput* OpGraph::find_input(std::string_view name) const {
  for (const auto& input : inputs) {
    if (input.name == name) return &input;
  }
  return nullptr;
}

const GraphAxis* OpGraph::find_axis(std::string_view name) const {
  for (const auto& axis : axes) {
    if (axis.name == name) return &axis;
  }
  return nullptr;
}

int64_t OpGraph::follow_views(int64_t value_id) const {
  for (;;) {
    const GraphNode* node = producer(value_id);
    if (!node || !node->view || node->args.empty()) return value_id;
    const auto source = node->args.front().as_value();
    if (!source) return value_id;
    value_id = *source;
  }
}

int64_t OpGraph::follow_views_and_casts(int64_t value_id) const {
  for (;;) {
    const GraphNode* node = producer(value_id);
    if (!node || node->args.empty()) return value_id;
    const auto source = node->args.front().as_value();
    if (!source) return value_id;
    if (!node->view) {
      if (!is_cast_op(node->base_name())) return value_id;
      const auto& from = value(*source);
      const auto& to = value(value_id);
      if (!from.dtype || !to.dtype || !is_value_preserving_cast(*from.dtype, *to.dtype)) {
        return value_id;
      }
    }
    value_id = *source;
  }
}

bool is_value_preserving_cast(DType from, DType to) {
  if (from == to || from == DType::Bool) return true;
  const auto float_rank = [](DType type) {
    switch (type) {
      case DType::Float8E4M3FN:
      case DType::Float8E5M2:
        return 1;
      case DType::Float16:
      case DType::BFloat16:
        return 2;
      case DType::Float32:
        return 3;
      case DType::Float64:
        return 4;
      default:
        return 0;
    }
  };
  const bool from_int = !dtype_is_floating(from);
  const bool to_int = !dtype_is_floating(to);
  if (!from_int && !to_int) {
    // fp16 and bf16 do not hold each other's values; everything fits in float32.
    if (float_rank(from) == 2 && float_rank(to) == 2) return false;
    if (float_rank(from) == 1 && float_rank(to) == 1) return false;
    return float_rank(from) < float_rank(to);
  }
  const bool from_unsigned = from == DType::UInt8;
  if (from_int && to_int) {
    if (from_unsigned) return dtype_size(to) > 1;
    return to != DType::UInt8 && dtype_size(to) >= dtype_size(from);
  }
  if (from_int && !to_int) {
    // A float's significand holds 8-bit integers from fp16 up, 16-bit from float32 up and
    // 32-bit in float64.
    const int rank = float_rank(to);
    if (dtype_size(from) == 1) return rank >= 2;
    if (dtype_size(from) == 2) return rank >= 3;
    if (dtype_size(from) == 4) return rank >= 4;
  }
  return false;
}

OpGraph parse_op_graph(const OrderedJson& json, std::string_view where) {
  const Parser parser{where};
  expect_object(json, where, "");
  OpGraph graph;
  graph.version =
      static_cast<int>(expect_int(parser.member(json, "version", ""), where, "version"));
  if (graph.version != 1) parser.fail("version", fmt::format("expected 1, got {}", graph.version));
  if (const auto* torch = find_member(json, "torch"))
    graph.torch_version = expect_string(*torch, where, "torch");
  if (const auto* trace = find_member(json, "trace"))
    graph.trace = expect_string(*trace, where, "trace");

  if (const auto* axes = find_member(json, "axes")) {
    expect_object(*axes, where, "axes");
    for (const auto& [name, content] : axes->items()) {
      const std::string path = field_path("axes", name);
      expect_object(content, where, path);
      GraphAxis axis;
      axis.name = name;
      axis.kind =
          expect_string(parser.member(content, "kind", path), where, field_path(path, "kind"));
      if (const auto* value = find_member(content, "value")) {
        axis.value = expect_int(*value, where, field_path(path, "value"));
      }
      if (const auto* traced = find_member(content, "traced")) {
        if (!traced->is_array())
          parser.fail(field_path(path, "traced"), "expected an array of integers");
        for (std::size_t i = 0; i < traced->size(); ++i) {
          axis.traced.push_back(
              expect_int((*traced)[i], where, field_index(field_path(path, "traced"), i)));
        }
      }
      graph.axes.push_back(std::move(axis));
    }
  }

  const auto& values = parser.member(json, "values", "");
  if (!values.is_array()) parser.fail("values", "expected an array");
  for (std::size_t i = 0; i < values.size(); ++i) {
    graph.values.push_back(parser.value(values[i], field_index("values", i), i));
  }
  const auto& buffers = parser.member(json, "buffers", "");
  if (!buffers.is_array()) parser.fail("buffers", "expected an array");
  for (std::size_t i = 0; i < buffers.size(); ++i) {
    graph.buffers.push_back(parser.buffer(buffers[i], field_index("buffers", i), i));
  }
  const auto& inputs = parser.member(json, "inputs", "");
  if (!inputs.is_array()) parser.fail("inputs", "expected an array");
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const std::string path = field_index("inputs", i);
    expect_object(inputs[i], where, path);
    GraphInput input;
    input.name =
        expect_string(parser.member(inputs[i], "name", path), where, field_path(path, "name"));
    if (const auto* scalar = find_member(inputs[i], "scalar")) {
      input.scalar_dtype = expect_string(*scalar, where, field_path(path, "scalar"));
    } else {
      input.value =
          expect_int(parser.member(inputs[i], "value", path), where, field_path(path, "value"));
      check_value_id(parser, graph, input.value, field_path(path, "value"));
    }
    graph.inputs.push_back(std::move(input));
  }
  const auto& nodes = parser.member(json, "nodes", "");
  if (!nodes.is_array()) parser.fail("nodes", "expected an array");
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    graph.nodes.push_back(parser.node(nodes[i], field_index("nodes", i), i));
  }
  const auto& outputs = parser.member(json, "outputs", "");
  if (!outputs.is_array()) parser.fail("outputs", "expected an array");
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const std::string path = field_index("outputs", i);
    expect_object(outputs[i], where, path);
    GraphOutput output;
    output.name =
        expect_string(parser.member(outputs[i], "name", path), where, field_path(path, "name"));
    output.value =
        expect_int(parser.member(outputs[i], "value", path), where, field_path(path, "value"));
    check_value_id(parser, graph, output.value, field_path(path, "value"));
    graph.outputs.push_back(std::move(output));
  }

  // Cross references.
  for (std::size_t i = 0; i < graph.values.size(); ++i) {
    const int64_t buffer = graph.values[i].buffer;
    if (buffer < 0 || buffer >= static_cast<int64_t>(graph.buffers.size())) {
      parser.fail(
          field_path(field_index("values", i), "buffer"),
          fmt::format("buffer {} does not exist ({} buffers)", buffer, graph.buffers.size()));
    }
  }
  for (std::size_t i = 0; i < graph.buffers.size(); ++i) {
    const auto& buffer = graph.buffers[i];
    const std::string path = field_index("buffers", i);
    if (buffer.source == GraphBuffer::Source::Node &&
        (buffer.node < 0 || buffer.node >= static_cast<int64_t>(graph.nodes.size()))) {
      parser.fail(field_path(path, "node"), fmt::format("node {} does not exist", buffer.node));
    }
    if (buffer.source == GraphBuffer::Source::Input && !graph.find_input(buffer.input)) {
      parser.fail(field_path(path, "input"), fmt::format("unknown input \"{}\"", buffer.input));
    }
  }
  graph.producer_of_.assign(graph.values.size(), -1);
  for (std::size_t i = 0; i < graph.nodes.size(); ++i) {
    const auto& node = graph.nodes[i];
    const std::string path = field_index("nodes", i);
    for (std::size_t a = 0; a < node.args.size(); ++a) {
      check_arg_ids(parser, graph, node.args[a], field_index(field_path(path, "args"), a));
    }
    for (const auto& [key, arg] : node.kwargs) {
      check_arg_ids(parser, graph, arg, field_path(field_path(path, "kwargs"), key));
    }
    for (std::size_t o = 0; o < node.outputs.size(); ++o) {
      const int64_t id = node.outputs[o];
      if (id < 0) continue;
      const std::string out_path = field_index(field_path(path, "outputs"), o);
      check_value_id(parser, graph, id, out_path);
      auto& producer = graph.producer_of_[static_cast<std::size_t>(id)];
      if (producer >= 0) {
        parser.fail(out_path,
                    fmt::format("value {} is already the output of node {}", id, producer));
      }
      producer = static_cast<int64_t>(i);
    }
  }
  functionalize_in_place_writes(graph);
  return graph;
}

}  // namespace kernelarc
