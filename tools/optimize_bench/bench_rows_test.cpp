#include "bench_rows.h"

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "core/test_support.h"

namespace kernelarc {
namespace {

class BenchRowsTest : public ::testing::Test {
 protected:
  static BenchRow finished_row() {
    BenchRow row;
    row.problem_dir = "softmax_f32";
    row.problem = "softmax_f32_rows";
    row.configuration = "6 agents, beam";
    row.seed = 3;
    row.best_ms = 0.1373;
    row.ci_low_ms = 0.1370;
    row.ci_high_ms = 0.1384;
    row.speedup = 0.94;
    row.speedup_low = 0.93;
    row.speedup_high = 0.95;
    row.wall_s = 11;
    row.winner = "memory: rowsoftmax_cuda MAX_VECS_PER_THREAD=8";
    return row;
  }

  kernelarc::testing::TempDir dir_;
  const std::filesystem::path path_ = dir_ / "rows.jsonl";
  const OrderedJson settings_ = {{"device", "cuda:0"}, {"budget", 24}};
};

TEST_F(BenchRowsTest, KeepsAFinishedRowForTheNextRunWithTheSameSettings) {
  BenchRows(path_, settings_).add(finished_row());

  const BenchRows again(path_, {{"budget", 24}, {"device", "cuda:0"}});  // key order differs
  const BenchRow* row = again.find("softmax_f32", "6 agents, beam", 3);
  ASSERT_NE(row, nullptr);
  EXPECT_EQ(row->problem, "softmax_f32_rows");
  EXPECT_DOUBLE_EQ(*row->best_ms, 0.1373);
  EXPECT_DOUBLE_EQ(*row->ci_high_ms, 0.1384);
  EXPECT_DOUBLE_EQ(*row->speedup_low, 0.93);
  EXPECT_EQ(row->winner, "memory: rowsoftmax_cuda MAX_VECS_PER_THREAD=8");
  EXPECT_EQ(again.find("softmax_f32", "6 agents, beam", 1), nullptr);
}

TEST_F(BenchRowsTest, IgnoresRowsOfOtherSettingsButKeepsThemInTheFile) {
  BenchRows(path_, settings_).add(finished_row());
  BenchRows other(path_, {{"device", "cuda:0"}, {"budget", 64}});
  EXPECT_TRUE(other.rows().empty());
  other.add(finished_row());
  EXPECT_EQ(BenchRows(path_, settings_).rows().size(), 1u);
}

TEST_F(BenchRowsTest, ReadsARowWithoutAWinnerOrATime) {
  std::ofstream(path_) << R"({"settings":{"device":"cuda:0","budget":24},"problem_dir":"p",)"
                       << R"("problem":"p","configuration":"4 agents, mcts","seed":1,)"
                       << R"("best_ms":null,"ci_low_ms":null,"ci_high_ms":null,"speedup":null,)"
                       << R"("speedup_low":null,"speedup_high":null,"wall_s":3})" << '\n';
  const BenchRows rows(path_, settings_);
  ASSERT_EQ(rows.rows().size(), 1u);
  EXPECT_FALSE(rows.rows()[0].best_ms.has_value());
  EXPECT_EQ(rows.rows()[0].winner, "");
}

TEST_F(BenchRowsTest, NamesTheFileLineAndFieldOfAMalformedRow) {
  BenchRows(path_, settings_).add(finished_row());
  std::ofstream(path_, std::ios::app)
      << R"({"settings":{"device":"cuda:0","budget":24},"problem_dir":"p","problem":"p",)"
      << R"("configuration":"c","seed":"one","wall_s":1})" << '\n';
  const std::string message =
      kernelarc::testing::input_error_of([&] { BenchRows rows(path_, settings_); });
  EXPECT_NE(message.find(path_.string() + ":2"), std::string::npos) << message;
  EXPECT_NE(message.find("seed"), std::string::npos) << message;
}

}  // namespace
}  // namespace kernelarc
