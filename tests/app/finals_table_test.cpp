// The finals table of `kernelarc optimize`: a speedup only against a baseline re-measured with
// the finalists, never the search's fitness against its first candidate dressed as one.
#include "app/finals_table.h"

#include <gtest/gtest.h>

#include <sstream>

namespace kernelarc {
namespace {

Finalist finalist(int64_t id, const std::string& label, double median_ms, double fitness) {
  Finalist made;
  made.candidate_id = id;
  made.agent = "explore";
  made.label = label;
  made.measurement.passed = true;
  made.measurement.times["w"].median_ms = median_ms;
  made.fitness = fitness;
  return made;
}

std::string printed(const OptimizeSummary& summary) {
  std::ostringstream out;
  print_finals(summary, out);
  return out.str();
}

TEST(FinalsTable, WithABaselineTheSpeedupIsOverIt) {
  OptimizeSummary summary;
  summary.baseline = finalist(1, "baseline naive", 2.0, 1.0);
  summary.finalists = {finalist(7, "row_cpu VEC=8", 1.0, 2.0)};
  const std::string text = printed(summary);
  EXPECT_NE(text.find("speedup over the baseline"), std::string::npos) << text;
  EXPECT_NE(text.find("2.00x"), std::string::npos) << text;
  EXPECT_NE(text.find("1.00x"), std::string::npos) << text;
}

TEST(FinalsTable, WithoutABaselineNoSpeedupIsShown) {
  // The search's fitness is then relative to its first passing candidate: 0.99x read as a
  // speedup over PyTorch.
  OptimizeSummary summary;
  summary.finalists = {finalist(7, "row_cpu VEC=8", 1.0, 1.25), finalist(9, "row_cpu", 1.3, 0.99)};
  const std::string text = printed(summary);
  EXPECT_EQ(text.find("x "), std::string::npos) << text;
  EXPECT_EQ(text.find("0.99"), std::string::npos) << text;
  EXPECT_EQ(text.find("1.25"), std::string::npos) << text;
  EXPECT_NE(text.find("no baseline"), std::string::npos) << text;
  // Both rows are there, best first, with their times.
  const auto first = text.find("row_cpu VEC=8"), second = text.find("1.3000");
  ASSERT_NE(first, std::string::npos) << text;
  ASSERT_NE(second, std::string::npos) << text;
  EXPECT_LT(first, second) << text;
}

}  // namespace
}  // namespace kernelarc
