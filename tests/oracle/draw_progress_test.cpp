// The lines that tell how the reference's draws go: one when a workload's first draw starts, one
// when its last ends.
#include "oracle/draw_progress.h"

#include <gtest/gtest.h>

namespace kernelarc {
namespace {

Problem row_problem() {
  Problem problem;
  problem.definition =
      parse_definition({{"name", "rows"},
                        {"axes", {{"N", {{"type", "var"}}}}},
                        {"inputs", {{"x", {{"shape", {"N"}}, {"dtype", "float32"}}}}},
                        {"outputs", {{"y", {{"shape", {"N"}}, {"dtype", "float32"}}}}},
                        {"reference", "def run(x):\n    return x\n"}},
                       "rows");
  for (const auto& [uuid, n] : {std::pair{"small", 4}, std::pair{"large", 1'000'000}}) {
    Workload workload;
    workload.uuid = uuid;
    workload.axes = {{"N", n}};
    problem.workloads.push_back(workload);
  }
  return problem;
}

TEST(DrawProgress, AWorkloadIsToldWhenItsFirstDrawStartsAndItsLastEnds) {
  const Problem problem = row_problem();
  std::vector<std::string> lines;
  DrawProgress progress(problem, "draw", [&](const std::string& line) { lines.push_back(line); });
  progress.add("t0", problem.workloads[1]);
  progress.add("t1", problem.workloads[1]);
  progress.add("t2", problem.workloads[0]);

  progress.started("t0");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0],
            "reference: workload large (N=1000000; 8 MB of inputs and outputs): 2 draws...");
  progress.ended("t0", true);
  progress.started("t1");
  EXPECT_EQ(lines.size(), 1u) << "nothing more until its last draw ends";
  progress.ended("t1", true);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[1].rfind("reference: workload large: 2 draws in ", 0), 0u) << lines[1];
  EXPECT_EQ(lines[1].substr(lines[1].size() - 2), " s") << lines[1];

  // A draw whose interpreter died before it started is announced, then counted as failed.
  progress.ended("t2", false);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[2], "reference: workload small (N=4; 32 bytes of inputs and outputs): 1 draw...");
  EXPECT_EQ(lines[3].rfind("reference: workload small: 1 of 1 draw failed, ", 0), 0u) << lines[3];
}

TEST(DrawProgress, WithNowhereToTellItSaysNothing) {
  const Problem problem = row_problem();
  DrawProgress progress(problem, "draw", {});
  progress.add("t0", problem.workloads[0]);
  progress.started("t0");
  EXPECT_NO_THROW(progress.ended("t0", true));  // nothing called through an empty function
}

}  // namespace
}  // namespace kernelarc
