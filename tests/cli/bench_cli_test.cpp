// `kernelarc bench` end to end on two CPU problems: a --wall-time chunk benches one problem and
// says how many remain, --resume finishes the rest and a further --resume measures nothing;
// bench.json carries every per-workload, per-problem and summary field; a rerun without
// --resume reuses the finished optimize runs instead of searching again, and refuses a report
// whose rows another machine measured or whose --keep-accuracy differs; an unknown --problems name
// is an input error naming it.
#include <gtest/gtest.h>

#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <nlohmann/json.hpp>

#include "cli/cli_test_support.h"
#include "source_dir.h"

namespace {

namespace fs = std::filesystem;

// The cheapest settings that still search and time the baselines.
const std::string kQuick =
    " --budget 2 --rounds 1 --problems rmsnorm_f32,softmax_f32 --trials 1 --warmup 1"
    " --iterations 5 --plain";

class BenchCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("kernelarc-bench-test-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    // Three CPU problems, each cut to its first (small) workload; --problems leaves one out.
    for (const char* name : {"layernorm_f32", "rmsnorm_f32", "softmax_f32"}) {
      const fs::path to = dir_ / "suite" / name;
      fs::create_directories(to);
      fs::copy(kSource / "problems/cpu" / name, to, fs::copy_options::recursive);
      std::ifstream in(to / "workload.jsonl");
      std::string first;
      std::getline(in, first);
      in.close();
      std::ofstream(to / "workload.jsonl") << first << '\n';
    }
  }
  void TearDown() override { fs::remove_all(dir_); }

  CommandResult bench(const std::string& extra) {
    return run("bench " + (dir_ / "suite").string() + kQuick + " --workspace " +
               (dir_ / "ws").string() + " --out " + (dir_ / "out").string() + extra);
  }
  nlohmann::json bench_json() {
    std::ifstream file(dir_ / "out" / "bench.json");
    return nlohmann::json::parse(file);
  }

  fs::path dir_;
};

void expect_timed(const nlohmann::json& contender, const std::string& what) {
  SCOPED_TRACE(what);
  ASSERT_TRUE(contender["median_ms"].is_number()) << contender.dump();
  const double median = contender["median_ms"].get<double>();
  EXPECT_GT(median, 0);
  EXPECT_LE(contender["ci_low_ms"].get<double>(), median);
  EXPECT_GE(contender["ci_high_ms"].get<double>(), median);
  EXPECT_GT(contender["samples"].get<int>(), 0);
}

TEST_F(BenchCli, WallTimeChunkThenResumeCompletesAndRerunReusesTheRuns) {
  const auto first = bench(" --wall-time 0");
  ASSERT_EQ(first.exit_code, 0) << first.output;
  EXPECT_NE(first.output.find("== rmsnorm_f32"), std::string::npos) << first.output;
  EXPECT_EQ(first.output.find("== softmax_f32"), std::string::npos) << first.output;
  EXPECT_NE(first.output.find("1 problem(s) remain"), std::string::npos) << first.output;
  // Bench times PyTorch afresh in its side-by-side rounds only: the search's finals time no
  // baseline, so the oracle cache holds no timing.
  for (const auto& entry : fs::recursive_directory_iterator(dir_ / "ws"))
    EXPECT_EQ(entry.path().string().find(".timing.json"), std::string::npos) << entry.path();
  auto json = bench_json();
  ASSERT_EQ(json["problems"].size(), 1u);
  EXPECT_EQ(json["remaining"], nlohmann::json::array({"softmax_f32"}));
  EXPECT_EQ(json["summary"]["remaining"], 1);

  // Rows another machine measured are not resumed here: one table, one machine.
  const std::string own = json["problems"][0]["hardware"].get<std::string>();
  EXPECT_FALSE(own.empty());
  EXPECT_NE(own, "cpu") << "the calibration's name for the machine, not the device's";
  auto elsewhere = json;
  elsewhere["problems"][0]["hardware"] = "Another Processor (64 cores)";
  std::ofstream(dir_ / "out" / "bench.json") << elsewhere.dump();
  const auto refused = bench(" --resume");
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.output.find("benched on Another Processor (64 cores)"), std::string::npos)
      << refused.output;
  std::ofstream(dir_ / "out" / "bench.json") << json.dump();
  // Nor are rows searched with accuracy trades allowed continued like for like (or back).
  EXPECT_EQ(json["keep_accuracy"], false);
  const auto like_for_like = bench(" --resume --keep-accuracy");
  EXPECT_NE(like_for_like.exit_code, 0);
  EXPECT_NE(like_for_like.output.find("and without --keep-accuracy; rerun with those"),
            std::string::npos)
      << like_for_like.output;

  const auto second = bench(" --resume");
  ASSERT_EQ(second.exit_code, 0) << second.output;
  EXPECT_NE(second.output.find("1 already benched, 1 to bench"), std::string::npos)
      << second.output;
  EXPECT_EQ(second.output.find("== rmsnorm_f32"), std::string::npos) << second.output;
  EXPECT_NE(second.output.find("== softmax_f32"), std::string::npos) << second.output;
  // The printed summary.
  EXPECT_NE(second.output.find("problems: 2 ("), std::string::npos) << second.output;
  EXPECT_NE(second.output.find("fast_1.0: "), std::string::npos) << second.output;
  EXPECT_NE(second.output.find("mean SOL score: "), std::string::npos) << second.output;
  EXPECT_NE(second.output.find("geomean speedup over the faster baseline: "), std::string::npos)
      << second.output;

  json = bench_json();
  EXPECT_EQ(json["device"], "cpu");
  EXPECT_EQ(json["budget"], 2);
  EXPECT_EQ(json["rounds"], 1);
  EXPECT_NE(json["command"].get<std::string>().find("--resume"), std::string::npos);
  EXPECT_FALSE(json["started"].get<std::string>().empty());
  EXPECT_NE(json["oracle"].get<std::string>().find("torch"), std::string::npos) << json["oracle"];
  EXPECT_TRUE(json["environment"].is_object());
  EXPECT_TRUE(json["remaining"].empty());
  EXPECT_EQ(second.output.find("layernorm"), std::string::npos) << second.output;
  const auto& summary = json["summary"];
  EXPECT_EQ(summary["problems"], 2);
  EXPECT_EQ(summary["won"].get<int>() + summary["tied"].get<int>() + summary["lost"].get<int>(), 2)
      << summary.dump();
  EXPECT_EQ(summary["no_template"], 0);
  EXPECT_EQ(summary["failed"], 0);
  EXPECT_TRUE(summary["geomean_speedup"].is_number());
  for (const char* field : {"fast_1.0", "fast_1.2"}) {
    const double fast = summary[field].get<double>();
    EXPECT_GE(fast, 0);
    EXPECT_LE(fast, 1);
  }
  // fast_1.0 counts median speedups above 1: every win, and some ties.
  EXPECT_GE(summary["fast_1.0"].get<double>() * 2, summary["won"].get<double>());
  EXPECT_LE(summary["fast_1.0"].get<double>() * 2,
            summary["won"].get<double>() + summary["tied"].get<double>());
  EXPECT_TRUE(summary.contains("mean_sol_score"));
  EXPECT_TRUE(summary.contains("sol_scored"));

  ASSERT_EQ(json["problems"].size(), 2u);
  EXPECT_EQ(json["problems"][0]["name"], "rmsnorm_f32");
  EXPECT_EQ(json["problems"][1]["name"], "softmax_f32");
  for (const auto& problem : json["problems"]) {
    SCOPED_TRACE(problem["name"].get<std::string>());
    EXPECT_TRUE(problem["run_id"].is_number());
    EXPECT_EQ(problem["evaluated"], 2);
    // Where the problem's time went: the search, then the side-by-side rounds (which time
    // PyTorch in a fresh process, so they take a share of their own).
    EXPECT_GT(problem["search_seconds"].get<double>(), 0);
    EXPECT_LT(problem["search_seconds"].get<double>(), problem["seconds"].get<double>());
    EXPECT_FALSE(problem["solution"].get<std::string>().empty());
    EXPECT_EQ(problem["accuracy_trades"], nlohmann::json::array());  // no CPU knob trades any
    EXPECT_TRUE(problem["speedup"]["value"].is_number());
    EXPECT_TRUE(problem.contains("sol_score"));
    ASSERT_EQ(problem["workloads"].size(), 1u);
    const auto& workload = problem["workloads"][0];
    expect_timed(workload["eager"], "eager");
    expect_timed(workload["kernelarc"], "kernelarc");
    EXPECT_TRUE(workload["compiled"]["median_ms"].is_null());
    EXPECT_FALSE(workload["compiled"]["note"].get<std::string>().empty());
    EXPECT_EQ(workload["faster_baseline"], "eager");
    const auto& speedup = workload["speedup"];
    EXPECT_NEAR(speedup["value"].get<double>(),
                workload["eager"]["median_ms"].get<double>() /
                    workload["kernelarc"]["median_ms"].get<double>(),
                1e-9);
    EXPECT_LE(speedup["low"].get<double>(), speedup["value"].get<double>());
    EXPECT_GE(speedup["high"].get<double>(), speedup["value"].get<double>());
    // A fresh workspace is calibrated before the first measurement (the guard's floor needs
    // it): T_SOL and the score are there.
    EXPECT_TRUE(workload["sol_ms"].is_number());
    EXPECT_EQ(workload["sol_note"].get<std::string>().find("no calibration"), std::string::npos);
    EXPECT_TRUE(workload["sol_score"].is_number());
    // The guard's diagnosis of the winner, in the report and printed with the problem's table.
    EXPECT_FALSE(workload["diagnosis"].get<std::string>().empty());
  }
  for (const auto* output : {&first.output, &second.output}) {
    EXPECT_NE(output->find("  diagnosis batch_size="), std::string::npos) << *output;
    EXPECT_NE(output->find(" s, of which the search "), std::string::npos) << *output;
  }
  std::ifstream markdown(dir_ / "out" / "bench.md");
  std::string text((std::istreambuf_iterator<char>(markdown)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("## rmsnorm_f32"), std::string::npos);
  EXPECT_NE(text.find("| workload |"), std::string::npos);
  EXPECT_NE(text.find("- diagnosis "), std::string::npos) << text;

  // Everything is benched: a further --resume measures nothing and keeps the results.
  const auto third = bench(" --resume");
  ASSERT_EQ(third.exit_code, 0) << third.output;
  EXPECT_NE(third.output.find("2 already benched, 0 to bench"), std::string::npos) << third.output;
  EXPECT_EQ(third.output.find("side-by-side round"), std::string::npos) << third.output;
  EXPECT_EQ(bench_json()["problems"], json["problems"]);

  // Without --resume the bench starts over, but the finished searches are reused.
  const auto rerun = bench("");
  ASSERT_EQ(rerun.exit_code, 0) << rerun.output;
  EXPECT_NE(rerun.output.find("reusing finished run " + json["problems"][0]["run_id"].dump()),
            std::string::npos)
      << rerun.output;
  EXPECT_EQ(rerun.output.find("optimizing "), std::string::npos) << rerun.output;
  EXPECT_EQ(bench_json()["problems"][1]["run_id"], json["problems"][1]["run_id"]);
}

TEST_F(BenchCli, UnknownProblemNameExitsTwoNamingIt) {
  const auto result =
      run("bench " + (dir_ / "suite").string() +
          " --problems rmsnorm_f32,no_such_problem --workspace " + (dir_ / "ws").string());
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_NE(result.output.find("no_such_problem"), std::string::npos) << result.output;
  EXPECT_EQ(result.output.find("rmsnorm_f32 (by"), std::string::npos) << result.output;
  EXPECT_FALSE(fs::exists(dir_ / "ws" / "bench"));
}

// A problem whose family has no CPU template (RoPE) gets its "no template" row without its
// baselines: timing eager and torch.compile for a row with nothing to compare took ~150 s per
// problem on the H200. --baselines-always times them.
TEST_F(BenchCli, NoTemplateProblemTimesNoBaselineUnlessAsked) {
  // The rope problem (annotated "rope", which no CPU template implements) with a reference that
  // no fused plan lowers either (i0, a Bessel function), so nothing serves it on the CPU.
  const fs::path rope = dir_ / "suite" / "rope";
  fs::create_directories(rope);
  nlohmann::ordered_json definition = nlohmann::ordered_json::parse(
      std::ifstream(kSource / "problems/cuda/rope_neox_bf16_q32_kv8_d128/definition.json"));
  definition["reference"] =
      "import torch\n\n\ndef run(q, k, cos, sin):\n"
      "    return (torch.special.i0(q.float()).to(q.dtype),\n"
      "            torch.special.i0(k.float()).to(k.dtype))\n";
  std::ofstream(rope / "definition.json") << definition.dump(2);
  std::ifstream in(kSource / "problems/cuda/rope_neox_bf16_q32_kv8_d128/workload.jsonl");
  std::string first;
  std::getline(in, first);
  std::ofstream(rope / "workload.jsonl") << first << '\n';
  const std::string name = nlohmann::json::parse(std::ifstream(rope / "definition.json"))["name"];

  auto bench_rope = [&](const std::string& extra) {
    const auto result =
        run("bench " + (dir_ / "suite").string() + " --problems " + name +
            " --budget 2 --rounds 1 --trials 1 --warmup 1 --iterations 5 --plain --workspace " +
            (dir_ / "ws").string() + " --out " + (dir_ / "out").string() + extra);
    EXPECT_EQ(result.exit_code, 0) << result.output;
    return bench_json()["problems"][0];
  };
  const auto skipped = bench_rope("");
  EXPECT_EQ(skipped["status"], "no template") << skipped.dump(2);
  EXPECT_TRUE(skipped["workloads"].empty()) << skipped.dump(2);  // no baseline timed
  std::cout << "no-template problem benched in " << skipped["seconds"] << " s\n";

  const auto timed = bench_rope(" --baselines-always");
  EXPECT_EQ(timed["status"], "no template") << timed.dump(2);
  ASSERT_EQ(timed["workloads"].size(), 1u) << timed.dump(2);
  expect_timed(timed["workloads"][0]["eager"], "eager");
}

}  // namespace
