// `kernelarc report` and `optimize --report` end to end: the HTML file of a real CPU run and of a
// real H200 bench directory (tests/data/report/h200_bench: `kernelarc bench problems/cuda
// --budget 16 --rounds 1 --workloads largest` on rmsnorm_bf16, softmax_f32 and gemm_bf16) is one
// self-contained file that headless Chromium loads without a console message, with every section
// and a mark per candidate; bad targets get one-line errors.
#include <gtest/gtest.h>

#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include "cli/cli_test_support.h"
#include "core/json_fields.h"
#include "source_dir.h"
#include "store/workspace.h"

namespace {

namespace fs = std::filesystem;

class ReportCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("kernelarc-report-test-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  /// What Chromium made of the page: the DOM after load, and its console lines (errors,
  /// warnings and logs alike: a clean page prints none). Empty DOM when no Chromium is here.
  struct Loaded {
    std::string dom;
    std::string console;
  };
  Loaded load_in_chromium(const fs::path& html) {
    const CommandResult which = run_shell("command -v chromium || command -v chromium-browser");
    if (which.exit_code != 0) return {};
    const std::string browser = which.output.substr(0, which.output.find('\n'));
    const fs::path err = dir_ / "chromium.err";
    const CommandResult dumped =
        run_shell("timeout 120 " + browser +
                  " --headless --no-sandbox --disable-gpu --enable-logging=stderr --v=0"
                  " --user-data-dir=" +
                  (dir_ / "chromium-profile").string() + " --dump-dom file://" +
                  fs::absolute(html).string() + " 2>" + err.string());
    EXPECT_EQ(dumped.exit_code, 0) << dumped.output;
    std::ifstream log(err);
    std::string console, line;
    while (std::getline(log, line))
      if (line.find("CONSOLE") != std::string::npos) console += line + "\n";
    return {dumped.output, console};
  }

  fs::path dir_;
};

std::size_t count_of(const std::string& text, const std::string& part) {
  std::size_t count = 0;
  for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++count;
  return count;
}

/// The page must need nothing from a network at view time.
void expect_self_contained(const std::string& html) {
  EXPECT_FALSE(std::regex_search(html, std::regex(R"((src|href)\s*=\s*["']?(https?:)?//)")))
      << "the report loads something from elsewhere";
  EXPECT_EQ(html.find("@import"), std::string::npos);
}

TEST_F(ReportCli, AnOptimizeRunsReportLoadsCleanlyWithEverySection) {
  const fs::path workspace = dir_ / "ws";
  const CommandResult optimized =
      run("optimize " + (kSource / "problems/cpu/rmsnorm_f32").string() +
          " --budget 6 --agents 2 --workloads 9f5092c6 --trials 1 --warmup 1 --iterations 5"
          " --final-top 2 --final-rounds 1 --no-skills --plain --report --workspace " +
          workspace.string());
  ASSERT_EQ(optimized.exit_code, 0) << optimized.output;
  const fs::path report = workspace / "runs" / "1" / "report.html";
  ASSERT_NE(optimized.output.find("report written to " + report.string()), std::string::npos)
      << optimized.output;
  const std::string html = kernelarc::read_text_file(report);
  expect_self_contained(html);
  for (const char* section :
       {"facts", "progress", "tree", "roofline", "workloads", "conclusions", "winner", "diagnosis"})
    EXPECT_NE(html.find(std::string("id=\"") + section + "\""), std::string::npos) << section;
  EXPECT_NE(html.find("rmsnorm_f32"), std::string::npos);
  EXPECT_NE(html.find("torch"), std::string::npos) << "the winner's bars name PyTorch's";

  // `kernelarc report` of the same run writes the same page wherever it is asked to.
  const fs::path again = dir_ / "again.html";
  const CommandResult reported =
      run("report latest --workspace " + workspace.string() + " --out " + again.string());
  ASSERT_EQ(reported.exit_code, 0) << reported.output;
  EXPECT_EQ(kernelarc::read_text_file(again), html);

  const Loaded loaded = load_in_chromium(report);
  if (loaded.dom.empty())
    GTEST_SKIP() << "no chromium on PATH (scripts/install-deps.sh installs it)";
  EXPECT_EQ(loaded.console, "") << "the page printed to the console";
  EXPECT_NE(loaded.dom.find("id=\"tree\""), std::string::npos);
  // A mark per candidate in the tree: the 6 searched and the baseline.
  kernelarc::Workspace opened(workspace);
  const auto candidates = opened.database().candidates_of(1);
  const auto tree = loaded.dom.find("id=\"tree\"");
  const auto roofline = loaded.dom.find("id=\"roofline\"");
  ASSERT_LT(tree, roofline);
  EXPECT_GE(count_of(loaded.dom.substr(tree, roofline - tree), "<circle"), candidates.size());
}

TEST_F(ReportCli, AnH200BenchDirectorysReportLoadsCleanly) {
  const fs::path bench = dir_ / "bench";
  fs::create_directories(bench);
  fs::copy_file(kSource / "tests/data/report/h200_bench/bench.json", bench / "bench.json");
  const CommandResult reported = run("report " + bench.string());
  ASSERT_EQ(reported.exit_code, 0) << reported.output;
  const std::string html = kernelarc::read_text_file(bench / "report.html");
  expect_self_contained(html);
  for (const char* part : {"id=\"problems\"", "id=\"workloads\"", "gemm_bf16_n4096_k4096",
                           "softmax_f32_rows", "1.31x", "cuBLASLt", "NVIDIA H200"})
    EXPECT_NE(html.find(part), std::string::npos) << part;

  const Loaded loaded = load_in_chromium(bench / "report.html");
  if (loaded.dom.empty())
    GTEST_SKIP() << "no chromium on PATH (scripts/install-deps.sh installs it)";
  EXPECT_EQ(loaded.console, "") << "the page printed to the console";
  EXPECT_NE(loaded.dom.find("id=\"problems\""), std::string::npos);
}

TEST_F(ReportCli, BadTargetsGetOneLineErrors) {
  const fs::path workspace = dir_ / "ws";
  CommandResult result = run("report 7 --workspace " + workspace.string());
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_NE(result.output.find("run 7: no such run"), std::string::npos) << result.output;

  result = run("report latest --workspace " + workspace.string());
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_NE(result.output.find("has no run"), std::string::npos) << result.output;

  result = run("report seven --workspace " + workspace.string());
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_NE(result.output.find("expected a run id"), std::string::npos) << result.output;

  result = run("report " + dir_.string());
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_NE(result.output.find("no bench.json"), std::string::npos) << result.output;

  std::ofstream(dir_ / "bench.json") << "{\"problems\": [{\"status\": \"won\"}]}";
  result = run("report " + dir_.string());
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_NE(result.output.find("problems[0].name"), std::string::npos) << result.output;
}

}  // namespace
