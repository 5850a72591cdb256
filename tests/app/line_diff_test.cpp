#include <gtest/gtest.h>

#include <string>

#include "app/line_diff.h"

namespace kernelarc {
namespace {

std::string diff_text(const std::string& before, const std::string& after) {
  // Held by name: a range-for over *diff_lines(...) would read a destroyed temporary.
  const auto lines = diff_lines(before, after);
  std::string text;
  for (const DiffLine& line : *lines) text += std::string(1, line.op) + line.text + "\n";
  return text;
}

TEST(LineDiff, KeepsTheCommonLinesAndMarksTheRest) {
  EXPECT_EQ(diff_text("a\nb\nc\n", "a\nx\nc\nd\n"), " a\n-b\n+x\n c\n+d\n");
  EXPECT_EQ(diff_text("", "new\n"), "+new\n");
  EXPECT_EQ(diff_text("gone\n", ""), "-gone\n");
  EXPECT_EQ(diff_text("same\n", "same\n"), " same\n");
}

TEST(LineDiff, FilesTooLargeForTheTableAreNotDiffed) {
  std::string big;
  for (int i = 0; i < 3000; ++i) big += std::to_string(i) + "\n";
  EXPECT_FALSE(diff_lines(big, big + "x\n"));
  EXPECT_TRUE(diff_lines(big, big + "x\n", 10000));
}

}  // namespace
}  // namespace kernelarc
