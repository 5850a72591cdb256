// The reference tracer (python/kernelarc_trace.py through oracle/graph_trace.h) on the problems in
// tests/data/trace: the op graph's ops, symbolic sizes, views and input/output mapping, the cache,
// and its failures. The traces need a Python with torch; without one they skip.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <optional>

#include "../core/test_support.h"
#include "oracle/graph_trace.h"
#include "oracle_test_support.h"

namespace kernelarc {
namespace {

using namespace oracle_testing;

Problem trace_problem(const std::string& name) {
  return load_problem(std::filesystem::path(KERNELARC_SOURCE_DIR) / "tests" / "data" / "trace" /
                      name);
}

class GraphTrace : public ::testing::Test {
 protected:
  void SetUp() override {
    if (testing::torch_python().empty())
      GTEST_SKIP() << "no Python with torch (set KERNELARC_PYTHON)";
    // Each run of the tracer leaves a line in runs_, so a cache hit is seen as no new line.
    python_ = write_script(temp_ / "python", "echo run >> '" + runs_.string() + "'\nexec '" +
                                                 testing::torch_python() + "' \"$@\"")
                  .string();
  }

  OrderedJson traced(const std::string& name) {
    GraphTraceResult result = trace_reference(trace_problem(name), python_, temp_ / "cache");
    EXPECT_TRUE(result.ok) << result.error;
    return result.graph;
  }

  int runs() const {
    std::ifstream file(runs_);
    int count = 0;
    for (std::string line; std::getline(file, line);) ++count;
    return count;
  }

  TempDir temp_;
  std::filesystem::path runs_ = temp_ / "runs.log";
  std::string python_;
};

std::vector<std::string> ops(const OrderedJson& graph) {
  std::vector<std::string> names;
  for (const OrderedJson& node : graph["nodes"]) names.push_back(node["op"]);
  return names;
}

const OrderedJson& value(const OrderedJson& graph, const OrderedJson& id) {
  return graph["values"].at(id.get<std::size_t>());
}

/// The value of output `index` of the first node running `op`.
const OrderedJson& result_of(const OrderedJson& graph, const std::string& op, int index = 0) {
  for (const OrderedJson& node : graph["nodes"]) {
    if (node["op"] == op) return value(graph, node["outputs"].at(index));
  }
  throw std::runtime_error("the graph has no " + op);
}

const OrderedJson& node_running(const OrderedJson& graph, const std::string& op) {
  for (const OrderedJson& node : graph["nodes"]) {
    if (node["op"] == op) return node;
  }
  throw std::runtime_error("the graph has no " + op);
}

using Strings = std::vector<std::string>;

TEST_F(GraphTrace, RmsnormInSolFormAndSecondTraceIsACacheHit) {
  OrderedJson graph = traced("rmsnorm");
  EXPECT_EQ(graph["version"], 1);
  EXPECT_EQ(graph["trace"], "meta");
  EXPECT_EQ(graph["axes"]["batch_size"], OrderedJson({{"kind", "var"}, {"traced", {17, 41}}}));
  EXPECT_EQ(graph["axes"]["hidden_size"], OrderedJson({{"kind", "const"}, {"value", 4096}}));
  EXPECT_EQ(ops(graph),
            (Strings{"aten._to_copy.default", "aten.pow.Tensor_Scalar", "aten.mean.dim",
                     "aten.add.Tensor", "aten.rsqrt.default", "aten.mul.Tensor",
                     "aten._to_copy.default", "aten.mul.Tensor", "aten._to_copy.default"}));
  ASSERT_EQ(graph["inputs"].size(), 2u);
  EXPECT_EQ(graph["inputs"][0]["name"], "hidden_states");
  const OrderedJson& x = value(graph, graph["inputs"][0]["value"]);
  EXPECT_EQ(x["dtype"], "bfloat16");
  EXPECT_EQ(x["shape"], OrderedJson({"batch_size", "4096"}));
  EXPECT_EQ(x["stride"], OrderedJson({"4096", "1"}));
  EXPECT_EQ(x["offset"], "0");
  EXPECT_EQ(graph["buffers"][x["buffer"].get<std::size_t>()],
            OrderedJson({{"id", x["buffer"]}, {"source", "input"}, {"input", "hidden_states"}}));

  const OrderedJson& mean = node_running(graph, "aten.mean.dim");
  EXPECT_EQ(mean["args"][1], OrderedJson::parse(R"({"list": [{"int": "-1"}]})"));
  EXPECT_EQ(mean["args"][2], OrderedJson::parse(R"({"bool": true})"));
  EXPECT_EQ(value(graph, mean["outputs"][0])["shape"], OrderedJson({"batch_size", "1"}));
  EXPECT_DOUBLE_EQ(node_running(graph, "aten.add.Tensor")["args"][1]["float"].get<double>(), 1e-5);
  for (const OrderedJson& node : graph["nodes"]) EXPECT_FALSE(node["view"]) << node.dump();

  ASSERT_EQ(graph["outputs"].size(), 1u);
  EXPECT_EQ(graph["outputs"][0]["name"], "output");
  EXPECT_EQ(graph["outputs"][0]["value"], graph["nodes"].back()["outputs"][0]);
  EXPECT_EQ(value(graph, graph["outputs"][0]["value"])["dtype"], "bfloat16");

  EXPECT_EQ(runs(), 1);
  EXPECT_EQ(files_ending(temp_ / "cache", ".trace.json").size(), 1u);
  EXPECT_EQ(traced("rmsnorm"), graph);
  EXPECT_EQ(runs(), 1);
}

TEST_F(GraphTrace, Softmax) {
  OrderedJson graph = traced("softmax");
  EXPECT_EQ(ops(graph), Strings{"aten._softmax.default"});
  EXPECT_EQ(graph["nodes"][0]["args"],
            OrderedJson::parse(R"([{"value": 0}, {"int": "-1"}, {"bool": false}])"));
  EXPECT_EQ(result_of(graph, "aten._softmax.default")["shape"], OrderedJson({"rows", "1000"}));
}

TEST_F(GraphTrace, LinearWithBiasAndGeluFlattensTheBatchAxes) {
  OrderedJson graph = traced("gemm_bias_gelu");
  // Torch 1.13 views the product back with view, 2.x with _unsafe_view.
  Strings names = ops(graph);
  ASSERT_EQ(names.size(), 5u);
  EXPECT_EQ(Strings(names.begin(), names.begin() + 3),
            (Strings{"aten.t.default", "aten.view.default", "aten.addmm.default"}));
  EXPECT_TRUE(names[3] == "aten.view.default" || names[3] == "aten._unsafe_view.default")
      << names[3];
  EXPECT_TRUE(graph["nodes"][3]["view"]);
  EXPECT_EQ(names[4], "aten.gelu.default");
  const OrderedJson& flat = node_running(graph, "aten.view.default");
  EXPECT_TRUE(flat["view"]);
  EXPECT_EQ(flat["args"][1], OrderedJson::parse(R"({"list": [{"int": "batch*tokens"},
                                                               {"int": "256"}]})"));
  EXPECT_EQ(value(graph, flat["outputs"][0])["shape"], OrderedJson({"batch*tokens", "256"}));

  // The transposed weight is the weight's buffer read with swapped strides.
  const OrderedJson& weight = value(graph, graph["inputs"][1]["value"]);
  const OrderedJson& transposed = result_of(graph, "aten.t.default");
  EXPECT_TRUE(node_running(graph, "aten.t.default")["view"]);
  EXPECT_EQ(transposed["buffer"], weight["buffer"]);
  EXPECT_EQ(transposed["shape"], OrderedJson({"256", "512"}));
  EXPECT_EQ(transposed["stride"], OrderedJson({"1", "256"}));

  EXPECT_FALSE(node_running(graph, "aten.addmm.default")["view"]);
  EXPECT_EQ(node_running(graph, "aten.gelu.default")["kwargs"],
            OrderedJson::parse(R"({"approximate": {"string": "tanh"}})"));
  EXPECT_EQ(value(graph, graph["outputs"][0]["value"])["shape"],
            OrderedJson({"batch", "tokens", "512"}));
}

TEST_F(GraphTrace, ReductionOverAMiddleDimensionKeepsIt) {
  OrderedJson graph = traced("reduce_middle");
  EXPECT_EQ(ops(graph), Strings{"aten.sum.dim_IntList"});
  const OrderedJson& x = value(graph, graph["inputs"][0]["value"]);
  EXPECT_EQ(x["stride"], OrderedJson({"rows*64", "64", "1"}));
  // The int scalar input is the first workload's value, a constant of the graph.
  EXPECT_EQ(graph["inputs"][1],
            OrderedJson({{"name", "dim"}, {"scalar", "int64"}, {"constant", 1}}));
  EXPECT_EQ(graph["nodes"][0]["args"],
            OrderedJson::parse(R"([{"value": 0}, {"list": [{"int": "1"}]}, {"bool": true}])"));
  EXPECT_EQ(result_of(graph, "aten.sum.dim_IntList")["shape"], OrderedJson({"batch", "1", "64"}));
}

TEST_F(GraphTrace, TensorsBuiltFromNumbersInTheReferenceAreConstants) {
  // torch.tensor(0.5, device=x.device) on meta tensors had no value to read.
  const OrderedJson graph = traced("literal_tensors");
  EXPECT_EQ(ops(graph), (Strings{"aten.minimum.default", "aten.mul.Tensor"}));
  std::vector<OrderedJson> constants;
  for (const OrderedJson& buffer : graph["buffers"])
    if (buffer["source"] == "constant") constants.push_back(buffer["data"]);
  EXPECT_EQ(constants, (std::vector<OrderedJson>{OrderedJson::array({0.5}),
                                                 OrderedJson::array({1.0, 2.0, 3.0, 4.0})}))
      << graph["buffers"].dump();
}

TEST_F(GraphTrace, RepeatInterleaveByAnIntCountIsTracedAsViews) {
  // Run as itself it fills an index tensor in place (empty, fill_, repeat_interleave.Tensor,
  // index_select), which the lowering cannot follow.
  const OrderedJson graph = traced("repeat_interleave");
  const Strings names = ops(graph);
  for (const char* op : {"aten.fill_.Scalar", "aten.index_select.default",
                         "aten.repeat_interleave.Tensor", "aten.empty.memory_format"})
    EXPECT_EQ(std::count(names.begin(), names.end(), op), 0)
        << op << " in " << graph["nodes"].dump();
  EXPECT_EQ(std::count(names.begin(), names.end(), "aten.expand.default"), 2);
  EXPECT_EQ(result_of(graph, "aten.mul.Tensor")["shape"], OrderedJson({"4", "rows", "4"}));
}

TEST_F(GraphTrace, AnIntScalarThatDiffersBetweenWorkloadsIsNotTraced) {
  Problem problem = trace_problem("reduce_middle");
  problem.workloads.at(1).inputs.at("dim").scalar_value = 2;
  const GraphTraceResult result = trace_reference(problem, python_, temp_ / "cache");
  EXPECT_FALSE(result.ok);
  EXPECT_NE(result.error.find("input dim (int64 scalar): traced as a constant, 1 in workload "
                              "small, but workload large gives 2"),
            std::string::npos)
      << result.error;
  EXPECT_EQ(runs(), 0) << "refused before any Python runs";
}

TEST_F(GraphTrace, FloatScalarInputIsNamedWhereItIsUsed) {
  OrderedJson graph = traced("rmsnorm_eps");
  EXPECT_EQ(graph["inputs"][2], OrderedJson({{"name", "eps"}, {"scalar", "float32"}}));
  EXPECT_EQ(node_running(graph, "aten.add.Tensor")["args"][1], OrderedJson({{"input", "eps"}}));
}

TEST_F(GraphTrace, RopeReshapesIntoPairsAndStacksBack) {
  OrderedJson graph = traced("flux_rope");
  const OrderedJson& x = value(graph, graph["inputs"][0]["value"]);
  EXPECT_EQ(x["stride"], OrderedJson({"seq_len*3072", "3072", "128", "1"}));

  int selects = 0;
  for (const OrderedJson& node : graph["nodes"]) {
    const std::string op = node["op"];
    const bool view_op = op.starts_with("aten.view.") || op.starts_with("aten.select.") ||
                         op.starts_with("aten.unsqueeze.");
    EXPECT_EQ(node["view"].get<bool>(), view_op) << op;
    if (!view_op) continue;
    // A view reads the buffer of what it views.
    EXPECT_EQ(value(graph, node["outputs"][0])["buffer"],
              value(graph, node["args"][0]["value"])["buffer"]);
    if (!op.starts_with("aten.select.")) continue;
    ++selects;
    const OrderedJson& half = value(graph, node["outputs"][0]);
    EXPECT_EQ(half["stride"].back(), "2");
    EXPECT_EQ(half["offset"], node["args"][2]["int"]);  // x[..., 0] and x[..., 1]
  }
  EXPECT_EQ(selects, 6);

  const OrderedJson& stacked = result_of(graph, "aten.stack.default");
  EXPECT_EQ(stacked["shape"], OrderedJson({"batch_size", "seq_len", "24", "64", "2"}));
  EXPECT_EQ(stacked["stride"], OrderedJson({"seq_len*3072", "3072", "128", "2", "1"}));
  const OrderedJson& output = value(graph, graph["outputs"][0]["value"]);
  EXPECT_EQ(output["shape"], OrderedJson({"batch_size", "seq_len", "24", "128"}));
  EXPECT_EQ(output["dtype"], "bfloat16");
}

TEST_F(GraphTrace, CrossEntropyWithInt64Targets) {
  OrderedJson graph = traced("cross_entropy");
  EXPECT_EQ(ops(graph), (Strings{"aten._log_softmax.default", "aten.nll_loss_forward.default"}));
  const OrderedJson& targets = value(graph, graph["inputs"][1]["value"]);
  EXPECT_EQ(targets["dtype"], "int64");
  EXPECT_EQ(targets["shape"], OrderedJson({"batch"}));
  const OrderedJson& loss = node_running(graph, "aten.nll_loss_forward.default");
  EXPECT_EQ(loss["args"][1], OrderedJson({{"value", graph["inputs"][1]["value"]}}));
  EXPECT_EQ(loss["outputs"].size(), 2u);  // the loss and the total weight
  EXPECT_EQ(graph["outputs"][0]["value"], loss["outputs"][0]);
  EXPECT_EQ(value(graph, loss["outputs"][0])["shape"], OrderedJson::array());
}

TEST_F(GraphTrace, ModuleParameterFailsAndTheFailureIsCached) {
  const Problem problem = trace_problem("module_parameter");
  GraphTraceResult result = trace_reference(problem, python_, temp_ / "cache");
  EXPECT_FALSE(result.ok);
  EXPECT_NE(result.error.find("the reference uses a tensor that is not one of its inputs (a "
                              "module parameter?): shape [64, 64], dtype float32"),
            std::string::npos)
      << result.error;
  GraphTraceResult again = trace_reference(problem, python_, temp_ / "cache");
  EXPECT_FALSE(again.ok);
  EXPECT_EQ(again.error, result.error);
  EXPECT_EQ(runs(), 1);
}

TEST_F(GraphTrace, ConstraintThatPrimesBreakTracesTwoWorkloads) {
  OrderedJson graph = traced("even_rows");
  EXPECT_EQ(graph["axes"]["rows"], OrderedJson({{"kind", "var"}, {"traced", {4, 10}}}));
  EXPECT_EQ(value(graph, graph["outputs"][0]["value"])["shape"], OrderedJson({"rows", "8"}));
}

// The primes (17, 41) are shorter rows than topk(x, 40) selects: the reference fails there, and
// is traced at the sizes of two workloads instead.
TEST_F(GraphTrace, AReferenceThatFailsAtThePrimesIsTracedAtTwoWorkloads) {
  OrderedJson graph = traced("topk_wide");
  EXPECT_EQ(graph["axes"]["v"], OrderedJson({{"kind", "var"}, {"traced", {100, 64}}}));
  EXPECT_EQ(value(graph, graph["outputs"][0]["value"])["shape"], OrderedJson({"b", "40"}));
  EXPECT_EQ(runs(), 2);  // the primes, then the workloads
}

// Neither needs torch: the "interpreter" is a shell script.
TEST(GraphTraceFailures, MalformedResultIsAnInternalErrorNamingTheFile) {
  TempDir temp;
  auto python = write_script(temp / "python", "echo '{\"ok\": true}' > \"$3\"");
  try {
    trace_reference(trace_problem("softmax"), python.string(), temp / "cache");
    ADD_FAILURE() << "expected an InternalError";
  } catch (const InternalError& error) {
    std::string message = error.what();
    EXPECT_NE(message.find("malformed"), std::string::npos) << message;
    auto kept = files_ending(temp / "cache", ".trace.json.malformed");
    ASSERT_EQ(kept.size(), 1u);
    EXPECT_NE(message.find(kept.front().string()), std::string::npos) << message;
  }
  EXPECT_TRUE(files_ending(temp / "cache", ".trace.json").empty());
}

TEST(GraphTraceFailures, InterpreterWithoutTorchIsAnInputError) {
  TempDir temp;
  // -S drops site-packages, where torch lives.
  auto python = write_script(temp / "python", "exec /usr/bin/python3 -S \"$@\"");
  std::string message = input_error_of(
      [&] { trace_reference(trace_problem("softmax"), python.string(), temp / "cache"); });
  EXPECT_NE(message.find("no Python that can import torch"), std::string::npos) << message;
  EXPECT_NE(message.find("cannot import torch"), std::string::npos) << message;
}

}  // namespace
}  // namespace kernelarc
