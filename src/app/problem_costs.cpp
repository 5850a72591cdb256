#include "app/problem_costs.h"

#include <set>
#include <vector>

#include <fmt/format.h>

namespace kernelarc {

namespace {

void collect_buffers(const GraphArg& arg, const OpGraph& graph, std::set<int64_t>& buffers) {
  if (const auto value = arg.as_value()) buffers.insert(graph.value(*value).buffer);
  for (const GraphArg& item : arg.items) collect_buffers(item, graph, buffers);
}

/// The buffers a compute node reads: a view alone touches no memory.
std::set<int64_t> read_buffers(const OpGraph& graph) {
  std::set<int64_t> buffers;
  for (const GraphNode& node : graph.nodes) {
    if (node.view) continue;
    for (const GraphArg& arg : node.args) collect_buffers(arg, graph, buffers);
    for (const auto& [name, arg] : node.kwargs) collect_buffers(arg, graph, buffers);
  }
  // An input returned as it is (or as a view of it) is read too.
  for (const GraphOutput& output : graph.outputs) buffers.insert(graph.value(output.value).buffer);
  return buffers;
}

std::string tensor_bytes_expr(const TensorSpec& spec) {
  std::vector<std::string> factors(spec.shape->begin(), spec.shape->end());
  factors.push_back(std::to_string(dtype_size(spec.dtype)));
  return fmt::format("{}", fmt::join(factors, "*"));
}

std::string parenthesized_product(const std::vector<std::string>& sizes) {
  std::vector<std::string> factors;
  for (const std::string& size : sizes) factors.push_back("(" + size + ")");
  return fmt::format("{}", fmt::join(factors, "*"));
}

}  // namespace

std::string io_bytes_expr(const Definition& def, const OpGraph& graph) {
  const std::set<int64_t> read = read_buffers(graph);
  std::vector<std::string> terms;
  for (const TensorSpec& input : def.inputs) {
    if (input.is_scalar()) continue;
    const GraphInput* traced = graph.find_input(input.name);
    if (traced != nullptr && !traced->is_scalar() &&
        !read.contains(graph.value(traced->value).buffer))
      continue;
    terms.push_back(tensor_bytes_expr(input));
  }
  for (const TensorSpec& output : def.outputs)
    if (!output.is_scalar()) terms.push_back(tensor_bytes_expr(output));
  return terms.empty() ? "0" : fmt::format("{}", fmt::join(terms, " + "));
}

std::string plan_flops_expr(const OrderedJson& plan) {
  std::vector<std::string> terms;
  for (const OrderedJson& kernel : plan.value("kernels", OrderedJson::array())) {
    if (kernel.value("kind", std::string()) != "matmul") continue;
    std::vector<std::string> sizes{"2"};
    for (const OrderedJson& size : kernel.value("batch", OrderedJson::array()))
      sizes.push_back(size.get<std::string>());
    for (const char* dim : {"m", "n", "k"}) sizes.push_back(kernel.at(dim).get<std::string>());
    terms.push_back(parenthesized_product(sizes));
  }
  return fmt::format("{}", fmt::join(terms, " + "));
}

}  // namespace kernelarc
