#include "lower/functionalize.h"

#include <algorithm>
#include <functional>
#include <set>
#include <string_view>

#include <fmt/format.h>

#include "lower/lowering.h"

namespace kernelarc {
namespace {

bool reads_value(const GraphArg& arg, const std::function<bool(int64_t)>& matches) {
  if (const auto id = arg.as_value(); id && matches(*id)) return true;
  return std::any_of(arg.items.begin(), arg.items.end(),
                     [&](const GraphArg& item) { return reads_value(item, matches); });
}

/// True when a node after `write` or a graph output uses a value of `buffer` made before the
/// write's result `written`: in memory that value now holds the written data, in the graph it
/// would still hold the old.
bool stale_value_is_read(const OpGraph& graph, const GraphNode& write, int64_t buffer,
                         int64_t written) {
  const auto stale = [&](int64_t id) { return id < written && graph.value(id).buffer == buffer; };
  for (const GraphNode& later : graph.nodes) {
    if (later.id <= write.id) continue;
    for (const GraphArg& arg : later.args) {
      if (reads_value(arg, stale)) return true;
    }
    for (const auto& [name, arg] : later.kwargs) {
      if (reads_value(arg, stale)) return true;
    }
  }
  return std::any_of(graph.outputs.begin(), graph.outputs.end(),
                     [&](const GraphOutput& output) { return stale(output.value); });
}

void replace_value(GraphArg& arg, const std::function<bool(int64_t)>& matches, int64_t by) {
  if (arg.kind == GraphArg::Kind::Value && matches(arg.value)) arg.value = by;
  for (GraphArg& item : arg.items) replace_value(item, matches, by);
}

/// Makes the nodes after `write` and the graph outputs read `written` where they read a value of
/// `buffer` made before it with the same layout (`y` itself after `y[:, i] = v` wrote through a
/// full slice of it): in memory that value holds the written data, which `written` is.
void read_written_through_aliases(OpGraph& graph, const GraphNode& write, int64_t buffer,
                                  int64_t written) {
  const GraphValue& result = graph.value(written);
  const auto alias = [&](int64_t id) {
    const GraphValue& value = graph.value(id);
    return id < written && value.buffer == buffer && value.shape == result.shape &&
           value.stride == result.stride && value.offset == result.offset;
  };
  for (GraphNode& later : graph.nodes) {
    if (later.id <= write.id) continue;
    for (GraphArg& arg : later.args) replace_value(arg, alias, written);
    for (auto& [name, arg] : later.kwargs) replace_value(arg, alias, written);
  }
  for (GraphOutput& output : graph.outputs)
    if (alias(output.value)) output.value = written;
}

/// `as_strided_(x, size, stride)` that changes only the strides of size-1 dims (what the
/// decomposition of an adaptive average pool leaves): every element stays where it was.
bool is_noop_restride(const OpGraph& graph, const GraphNode& node) {
  if (node.op != "aten.as_strided_.default" || node.args.size() < 3 || node.output() < 0)
    return false;
  const auto target = node.args[0].as_value();
  const auto size = node.args[1].as_int_expr_list();
  const auto stride = node.args[2].as_int_expr_list();
  if (!target || !size || !stride) return false;
  const GraphValue& value = graph.value(*target);
  if (*size != value.shape || stride->size() != value.stride.size()) return false;
  if (node.args.size() > 3 && !node.args[3].is_none()) {
    const auto offset = node.args[3].as_int_expr();
    if (!offset || !(*offset == value.offset)) return false;
  }
  for (std::size_t d = 0; d < stride->size(); ++d)
    if (!value.shape[d].is_one() && !((*stride)[d] == value.stride[d])) return false;
  return true;
}

/// "aten.index_put_.default" -> "aten.index_put.default".
std::string functional_op(const GraphNode& node) {
  std::string name(node.base_name());
  name.pop_back();
  return fmt::format("aten.{}.{}", name, node.overload());
}

}  // namespace

bool is_whole_tensor_write(std::string_view name) {
  static const std::set<std::string_view> writes = {"copy_",       "index_put_", "index_add_",
                                                    "index_copy_", "scatter_",   "scatter_add_"};
  return writes.contains(name);
}

void functionalize_in_place_writes(OpGraph& graph) {
  for (GraphNode& node : graph.nodes) {
    if (!is_noop_restride(graph, node)) continue;
    // The same elements under new strides: a view of the same values.
    node.op = "aten.alias.default";
    node.args.resize(1);
    node.view = true;
  }
  for (GraphNode& node : graph.nodes) {
    if (!is_whole_tensor_write(node.base_name()) || node.outputs.size() != 1 || node.outputs[0] < 0)
      continue;
    const auto target = node.args.empty() ? std::nullopt : node.args[0].as_value();
    const int64_t written = node.outputs[0];
    if (!target || graph.value(*target).buffer != graph.value(written).buffer) continue;
    // A write into part of a tensor (a slice) keeps its place: the values made from it later
    // are laid out over the whole buffer.
    const GraphValue& result = graph.value(written);
    if (!result.offset.is_zero() || !lowering::is_contiguous(result.stride, result.shape)) continue;
    const int64_t old_buffer = result.buffer;
    read_written_through_aliases(graph, node, old_buffer, written);
    if (stale_value_is_read(graph, node, old_buffer, written)) continue;

    GraphBuffer fresh;
    fresh.id = static_cast<int64_t>(graph.buffers.size());
    fresh.source = GraphBuffer::Source::Node;
    fresh.node = node.id;
    graph.buffers.push_back(fresh);
    // The written value and everything made from it later share the buffer: the values are
    // numbered in the order the trace made them.
    for (GraphValue& value : graph.values) {
      if (value.id >= written && value.buffer == old_buffer) value.buffer = fresh.id;
    }
    node.op = functional_op(node);
  }
}

}  // namespace kernelarc
