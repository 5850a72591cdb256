#include "lower_case.h"

#include <cmath>
#include <random>

#include <gtest/gtest.h>

#include "core/dtype.h"

namespace kernelarc::lower_test {

Case lower_case(const std::string& name) {
  const std::string dir = std::string(KERNELARC_SOURCE_DIR) + "/tests/data/lower/" + name;
  Case c{load_definition(dir + "/definition.json"),
         parse_op_graph(parse_json_text(read_text_file(dir + "/graph.json"), "graph.json"),
                        "graph.json"),
         {}};
  c.lowering = lower_to_plan(c.graph, c.definition);
  return c;
}

std::vector<std::string> kernel_kinds(const Json& plan) {
  std::vector<std::string> kinds;
  for (const auto& kernel : plan["kernels"]) kinds.push_back(kernel["kind"]);
  return kinds;
}

int temp_count(const Json& plan) {
  int count = 0;
  for (const auto& buffer : plan["buffers"]) count += buffer["kind"] == "temp";
  return count;
}

/// The tensor's shape at `axes` (every axis of the definition resolved).
static std::vector<int64_t> shape_of(const TensorSpec& spec, const AxisValues& axes) {
  std::vector<int64_t> shape;
  if (!spec.shape) return shape;  // a scalar input
  for (const auto& axis_name : *spec.shape) shape.push_back(axes.at(axis_name));
  return shape;
}

double rounded(DType dtype, double value) {
  unsigned char bytes[8] = {};
  store_element(dtype, bytes, value);
  return load_element(dtype, bytes);
}

void check_semantics(const Case& c, const AxisValues& vars,
                     const std::function<PlanBuffers(const PlanBuffers&)>& reference,
                     double tolerance, int64_t int_range) {
  ASSERT_TRUE(c.lowering.ok) << c.lowering.reason;
  Workload workload;
  workload.axes = vars;
  const AxisValues axes = resolve_axes(c.definition, workload);  // const and expr axes too
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> uniform(-2.0, 2.0);
  PlanBuffers inputs;
  for (const auto& spec : c.definition.inputs) {
    int64_t elements = 1;
    for (const int64_t extent : shape_of(spec, axes)) elements *= extent;
    auto& data = inputs[spec.name];
    for (int64_t i = 0; i < elements; ++i) {
      // A float scalar input is an eps or a scale: drawn positive.
      const double drawn = spec.shape ? uniform(rng) : 0.01 + std::fabs(uniform(rng));
      data.push_back(dtype_is_floating(spec.dtype)
                         ? rounded(spec.dtype, drawn)
                         : static_cast<double>(rng() % static_cast<uint64_t>(int_range)));
    }
  }
  std::map<std::string, std::vector<int64_t>> output_shapes;
  for (const auto& spec : c.definition.outputs) {
    output_shapes[spec.name] = shape_of(spec, axes);
  }
  const PlanBuffers got = run_plan(c.lowering.plan, axes, inputs, output_shapes);
  const PlanBuffers expected = reference(inputs);
  for (const auto& spec : c.definition.outputs) {
    const auto& want = expected.at(spec.name);
    const auto& have = got.at(spec.name);
    ASSERT_EQ(want.size(), have.size()) << spec.name;
    for (std::size_t i = 0; i < want.size(); ++i) {
      const double expected_value = rounded(spec.dtype, want[i]);
      EXPECT_NEAR(have[i], expected_value, tolerance * (1 + std::fabs(expected_value)))
          << spec.name << "[" << i << "]\n"
          << c.lowering.plan.dump(1);
    }
  }
}

namespace {

int expression_nodes(const Json& e) {
  if (!e.is_array()) return 0;
  int nodes = 1;
  for (const auto& operand : e) nodes += expression_nodes(operand);
  return nodes;
}

}  // namespace

int plan_expression_nodes(const Json& plan) {
  int nodes = 0;
  for (const auto& kernel : plan["kernels"]) {
    for (const auto& store : kernel["stores"]) nodes += expression_nodes(store["value"]);
    if (kernel.contains("stages")) {
      for (const auto& stage : kernel["stages"]) nodes += expression_nodes(stage["value"]);
    }
    if (kernel.contains("value")) nodes += expression_nodes(kernel["value"]);
  }
  return nodes;
}

}  // namespace kernelarc::lower_test
