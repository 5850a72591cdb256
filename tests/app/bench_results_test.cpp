// A bench row whose winner trades accuracy the reference keeps is marked in every view (suite
// table, problem line, summary, bench.json) and read back; a --keep-accuracy report says it is
// like for like; reports written before either field existed still read.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "app/bench_results.h"
#include "source_dir.h"

namespace kernelarc {
namespace {

BenchProblem timed_problem(const std::string& name, double eager_ms, double kernelarc_ms) {
  BenchProblem problem;
  problem.name = name;
  problem.dir = "suite/" + name;
  problem.op_family = "scaled_gemm";
  problem.solution = "scaled_gemm_cublaslt FAST_ACCUM=1,HEURISTIC_RANK=3";
  BenchWorkload workload;
  workload.uuid = "w0";
  workload.axes = "M=4096";
  workload.eager.time = MedianInterval{eager_ms, eager_ms * 0.99, eager_ms * 1.01, 10};
  workload.kernelarc.time =
      MedianInterval{kernelarc_ms, kernelarc_ms * 0.99, kernelarc_ms * 1.01, 10};
  problem.workloads.push_back(workload);
  problem.settle_status();
  return problem;
}

BenchReport report_of(std::vector<BenchProblem> problems, bool keep_accuracy) {
  BenchReport report;
  report.suite = "suite";
  report.device = "cuda:0";
  report.budget = 32;
  report.rounds = 3;
  report.keep_accuracy = keep_accuracy;
  report.problems = std::move(problems);
  return report;
}

std::string summary_text(const BenchReport& report) {
  std::ostringstream out;
  print_bench_summary(report, out);
  return out.str();
}

TEST(BenchAccuracyTrades, MarkedInEveryViewAndReadBack) {
  BenchProblem traded = timed_problem("fp8_rowwise", 0.104, 0.100);
  traded.accuracy_trades = {"FAST_ACCUM=1: fast accumulation"};
  BenchProblem exact = timed_problem("fp8_blockscale", 0.129, 0.143);
  exact.solution = "scaled_gemm_cublaslt FAST_ACCUM=0,HEURISTIC_RANK=6";
  const BenchReport report = report_of({traded, exact}, false);

  const std::string text = summary_text(report);
  EXPECT_NE(text.find("FAST_ACCUM=1,HEURISTIC_RANK=3 [trades accuracy]"), std::string::npos)
      << text;
  EXPECT_EQ(text.find("FAST_ACCUM=0,HEURISTIC_RANK=6 [trades accuracy]"), std::string::npos)
      << text;
  EXPECT_NE(text.find("not like for like: 1 winner(s) trade accuracy"), std::string::npos) << text;
  std::ostringstream line;
  print_bench_problem(report.problems[0], line);
  EXPECT_NE(line.str().find("(trades accuracy, so not like for like: FAST_ACCUM=1: fast "
                            "accumulation)"),
            std::string::npos)
      << line.str();
  EXPECT_NE(bench_markdown(report).find("[trades accuracy]"), std::string::npos);

  const OrderedJson json = bench_to_json(report);
  EXPECT_EQ(json["summary"]["trading_accuracy"], 1);
  EXPECT_EQ(json["keep_accuracy"], false);
  const BenchReport read = bench_from_json(json, "bench.json");
  EXPECT_EQ(read.problems[0].accuracy_trades, traded.accuracy_trades);
  EXPECT_TRUE(read.problems[1].accuracy_trades.empty());
  EXPECT_FALSE(read.keep_accuracy);
}

TEST(BenchAccuracyTrades, KeepAccuracyReportSaysLikeForLike) {
  const BenchReport report = report_of({timed_problem("fp8_rowwise", 0.104, 0.110)}, true);
  const std::string text = summary_text(report);
  EXPECT_NE(text.find("like for like: --keep-accuracy searched no knob value that trades "
                      "accuracy"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("not like for like"), std::string::npos) << text;
  EXPECT_NE(bench_markdown(report).find("; --keep-accuracy"), std::string::npos);
  EXPECT_TRUE(bench_from_json(bench_to_json(report), "bench.json").keep_accuracy);
}

TEST(BenchAccuracyTrades, ReportsWrittenBeforeTheFieldsRead) {
  const auto path =
      std::filesystem::path(KERNELARC_SOURCE_DIR) / "tests/data/report/h200_bench/bench.json";
  std::ifstream file(path);
  const OrderedJson json = OrderedJson::parse(file);
  ASSERT_FALSE(json.contains("keep_accuracy"));
  const BenchReport report = bench_from_json(json, path.string());
  EXPECT_FALSE(report.keep_accuracy);
  ASSERT_FALSE(report.problems.empty());
  for (const BenchProblem& problem : report.problems) EXPECT_TRUE(problem.accuracy_trades.empty());
}

}  // namespace
}  // namespace kernelarc
