// `kernelarc explain`'s words for a kernel plan and a graph: a line per kernel with its kind,
// sizes, stages, loads and stores; a line per compute node with views folded into operands.
#include <gtest/gtest.h>

#include "app/explain.h"

namespace kernelarc {
namespace {

TEST(PlanLines, NameTheTempsAndEachKernelsShapeStagesLoadsAndStores) {
  const OrderedJson plan = {
      {"version", 1},
      {"buffers",
       {{{"name", "x"}, {"kind", "input"}, {"index", 0}, {"dtype", "float32"}},
        {{"name", "t0"}, {"kind", "temp"}, {"dtype", "float32"}, {"elements", "N"}}}},
      {"kernels",
       {{{"kind", "reduce"},
         {"domain", {"N"}},
         {"reduce", {"D"}},
         {"loads", {{"in", {{"buffer", "x"}}}}},
         {"stages", {{{"name", "s0"}, {"op", "max"}}, {{"name", "s1"}, {"op", "sum"}}}},
         {"stores", {{{"buffer", "t0"}, {"over", "keep"}}}}},
        {{"kind", "matmul"},
         {"batch", OrderedJson::array()},
         {"m", "N"},
         {"n", "8"},
         {"k", "D"},
         {"a", {{"buffer", "x"}}},
         {"b", {{"buffer", "w"}}},
         {"loads", OrderedJson::object()},
         {"stores", {{{"buffer", "output"}}}}}}}};
  const std::vector<std::string> lines = plan_lines(plan);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], "temps: t0 (float32[N])");
  EXPECT_EQ(lines[1],
            "kernel 0: reduce over [D] for each of [N]; stages s0 = max, s1 = sum; loads x; "
            "stores t0 (keep)");
  EXPECT_EQ(lines[2], "kernel 1: matmul m=N n=8 k=D batch []; loads x, w; stores output");
}

TEST(GraphLines, FoldViewsIntoTheOperandsThatUseThem) {
  const OrderedJson json = {{"version", 1},
                            {"torch", "2.11.0"},
                            {"trace", "meta"},
                            {"axes", {{"N", {{"kind", "var"}, {"traced", {17, 41}}}}}},
                            {"inputs", {{{"name", "x"}, {"value", 0}}}},
                            {"values",
                             {{{"id", 0},
                               {"dtype", "float32"},
                               {"shape", {"N"}},
                               {"stride", {"1"}},
                               {"offset", "0"},
                               {"buffer", 0}},
                              {{"id", 1},
                               {"dtype", "float32"},
                               {"shape", {"N", "1"}},
                               {"stride", {"1", "1"}},
                               {"offset", "0"},
                               {"buffer", 0}},
                              {{"id", 2},
                               {"dtype", "float32"},
                               {"shape", {"N", "1"}},
                               {"stride", {"1", "1"}},
                               {"offset", "0"},
                               {"buffer", 1}}}},
                            {"buffers",
                             {{{"id", 0}, {"source", "input"}, {"input", "x"}},
                              {{"id", 1}, {"source", "node"}, {"node", 1}}}},
                            {"nodes",
                             {{{"id", 0},
                               {"op", "aten.unsqueeze.default"},
                               {"view", true},
                               {"args", {{{"value", 0}}, {{"int", "1"}}}},
                               {"kwargs", OrderedJson::object()},
                               {"outputs", {1}}},
                              {{"id", 1},
                               {"op", "aten.mul.Tensor"},
                               {"view", false},
                               {"args", {{{"value", 1}}, {{"float", 2.5}}}},
                               {"kwargs", OrderedJson::object()},
                               {"outputs", {2}}}}},
                            {"outputs", {{{"name", "y"}, {"value", 2}}}}};
  const std::vector<std::string> lines = graph_lines(parse_op_graph(json, "graph"));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], "%2 = aten.mul.Tensor(x.view[N, 1], 2.5) -> float32[N, 1]");
  EXPECT_EQ(lines[1], "y = %2");
}

}  // namespace
}  // namespace kernelarc
