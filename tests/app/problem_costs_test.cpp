// The cost expressions derived for a recognized problem: bytes of what the graph reads and
// writes, FLOPs of a plan's matrix products.
#include <gtest/gtest.h>

#include "app/problem_costs.h"

namespace kernelarc {
namespace {

TEST(PlanFlops, SumsTwiceTheProductOfEveryMatmulsSizes) {
  const OrderedJson plan = {
      {"kernels",
       {{{"kind", "pointwise"}, {"domain", {"M"}}},
        {{"kind", "matmul"}, {"batch", {"B"}}, {"m", "M"}, {"n", "64"}, {"k", "K // 2"}},
        {{"kind", "matmul"},
         {"batch", OrderedJson::array()},
         {"m", "M"},
         {"n", "M"},
         {"k", "8"}}}}};
  const std::string flops = plan_flops_expr(plan);
  EXPECT_EQ(flops, "(2)*(B)*(M)*(64)*(K // 2) + (2)*(M)*(M)*(8)");
  EXPECT_EQ(evaluate_expr(flops, {{"B", 3}, {"M", 5}, {"K", 10}}),
            2 * 3 * 5 * 64 * 5 + 2 * 5 * 5 * 8);
}

TEST(PlanFlops, IsEmptyWithoutAMatmul) {
  EXPECT_EQ(plan_flops_expr({{"kernels", {{{"kind", "reduce"}}}}}), "");
}

TEST(IoBytes, CountsTheInputsAComputeNodeReadsAndEveryOutput) {
  const Definition def =
      parse_definition({{"name", "p"},
                        {"axes", {{"N", {{"type", "var"}}}}},
                        {"inputs",
                         {{"x", {{"shape", {"N"}}, {"dtype", "bfloat16"}}},
                          {"unused", {{"shape", {"N"}}, {"dtype", "float32"}}},
                          {"eps", {{"shape", nullptr}, {"dtype", "float32"}}}}},
                        {"outputs", {{"y", {{"shape", {"N"}}, {"dtype", "float32"}}}}},
                        {"reference", "def run(x, unused, eps):\n    return x.float() + eps\n"}},
                       "p");
  // x is viewed, then read by the add; `unused` is only viewed.
  const OrderedJson graph_json = {{"version", 1},
                                  {"torch", "2.11.0"},
                                  {"trace", "meta"},
                                  {"axes", {{"N", {{"kind", "var"}, {"traced", {17, 41}}}}}},
                                  {"inputs",
                                   {{{"name", "x"}, {"value", 0}},
                                    {{"name", "unused"}, {"value", 1}},
                                    {{"name", "eps"}, {"scalar", "float32"}}}},
                                  {"values",
                                   {{{"id", 0},
                                     {"dtype", "bfloat16"},
                                     {"shape", {"N"}},
                                     {"stride", {"1"}},
                                     {"offset", "0"},
                                     {"buffer", 0}},
                                    {{"id", 1},
                                     {"dtype", "float32"},
                                     {"shape", {"N"}},
                                     {"stride", {"1"}},
                                     {"offset", "0"},
                                     {"buffer", 1}},
                                    {{"id", 2},
                                     {"dtype", "float32"},
                                     {"shape", {"N", "1"}},
                                     {"stride", {"1", "1"}},
                                     {"offset", "0"},
                                     {"buffer", 1}},
                                    {{"id", 3},
                                     {"dtype", "float32"},
                                     {"shape", {"N"}},
                                     {"stride", {"1"}},
                                     {"offset", "0"},
                                     {"buffer", 2}}}},
                                  {"buffers",
                                   {{{"id", 0}, {"source", "input"}, {"input", "x"}},
                                    {{"id", 1}, {"source", "input"}, {"input", "unused"}},
                                    {{"id", 2}, {"source", "node"}, {"node", 1}}}},
                                  {"nodes",
                                   {{{"id", 0},
                                     {"op", "aten.unsqueeze.default"},
                                     {"view", true},
                                     {"args", {{{"value", 1}}, {{"int", "1"}}}},
                                     {"kwargs", OrderedJson::object()},
                                     {"outputs", {2}}},
                                    {{"id", 1},
                                     {"op", "aten.add.Tensor"},
                                     {"view", false},
                                     {"args", {{{"value", 0}}, {{"input", "eps"}}}},
                                     {"kwargs", OrderedJson::object()},
                                     {"outputs", {3}}}}},
                                  {"outputs", {{{"name", "y"}, {"value", 3}}}}};
  const OpGraph graph = parse_op_graph(graph_json, "graph");
  EXPECT_EQ(io_bytes_expr(def, graph), "N*2 + N*4");
}

}  // namespace
}  // namespace kernelarc
