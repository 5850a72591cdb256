// The oracle with PyTorch references (tests/data/oracle/py_*): caching, determinism, the name
// heuristics, custom and safetensors inputs, failing and crashing references, baselines.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <chrono>
#include <cmath>
#include <fstream>
#include <utility>

#include "oracle/baseline_processes.h"
#include "oracle/oracle.h"
#include "oracle_test_support.h"

namespace kernelarc {
namespace {

using namespace oracle_testing;

class PythonOracleTest : public ::testing::Test {
 protected:
  OracleOptions options(const std::string& cache = "oracle") const {
    OracleOptions result;
    result.cache_dir = temp_ / cache;
    return result;
  }
  std::filesystem::path problem_cache(const Problem& problem,
                                      const std::string& cache = "oracle") const {
    return temp_ / cache / problem.definition.name;
  }
  /// py_scale under another name, with `body` as its baseline code's run(x, rms_norm_weight,
  /// alpha) and, when given, the tolerance that code is held to.
  Problem with_baseline(const std::string& name, const std::string& body,
                        const OrderedJson& baseline_tolerance = nullptr) const {
    const auto dir = temp_.path() / name;
    std::filesystem::create_directories(dir);
    std::filesystem::copy_file(fixture("py_scale") / "workload.jsonl", dir / "workload.jsonl");
    OrderedJson definition =
        OrderedJson::parse(std::ifstream(fixture("py_scale") / "definition.json"));
    definition["name"] = name;
    definition["kernelarc"] = {
        {"baseline",
         "import time\nimport torch\n\n\ndef run(x, rms_norm_weight, alpha):\n" + body}};
    if (!baseline_tolerance.is_null())
      definition["kernelarc"]["baseline_tolerance"] = baseline_tolerance;
    std::ofstream(dir / "definition.json") << definition.dump(2);
    return load_problem(dir);
  }

  TempDir temp_;
};

TEST_F(PythonOracleTest, PrepareCachesEveryTrialAndErrorAndSecondPrepareRunsNoPython) {
  Problem problem = fixture_problem("py_scale");
  Oracle oracle(options());
  oracle.prepare(problem, 2);
  EXPECT_EQ(oracle.python_runs(), 2);  // the trials, then the twins of trial 0

  auto dir = problem_cache(problem);
  // 2 good workloads x (2 trials + the twin)
  EXPECT_EQ(files_ending(dir, ".inputs.safetensors").size(), 6u);
  EXPECT_EQ(files_ending(dir, ".expected.safetensors").size(), 6u);
  EXPECT_EQ(files_ending(dir, ".error.json").size(), 2u);  // the failing workload, both trials
  EXPECT_TRUE(files_ending(dir, ".tmp").empty());
  EXPECT_FALSE(std::filesystem::exists(temp_ / "oracle" / ".scratch") &&
               !std::filesystem::is_empty(temp_ / "oracle" / ".scratch"));

  // The failing workload is reported with the reference's message; its error is cached.
  const Workload& bad = workload_named(problem, "bad");
  auto error = oracle.reference_error(problem, bad);
  ASSERT_TRUE(error.has_value());
  EXPECT_NE(error->find("ValueError: three rows are not supported (reference line"),
            std::string::npos)
      << *error;
  std::string message = input_error_of([&] { oracle.expected(problem, bad, 0); });
  EXPECT_NE(message.find("workload bad"), std::string::npos) << message;
  EXPECT_NE(message.find("three rows are not supported"), std::string::npos) << message;

  oracle.prepare(problem, 2);
  EXPECT_EQ(oracle.python_runs(), 2);

  Oracle fresh(options());
  fresh.prepare(problem, 2);
  EXPECT_EQ(fresh.python_runs(), 0);
  auto cached = fresh.reference_error(problem, bad);
  ASSERT_TRUE(cached.has_value());
  EXPECT_EQ(*cached, *error);
  EXPECT_FALSE(fresh.reference_error(problem, workload_named(problem, "small")).has_value());
}

TEST_F(PythonOracleTest, InputsAndExpectedMatchARecomputation) {
  Problem problem = fixture_problem("py_scale");
  Oracle oracle(options());
  oracle.prepare(problem, 2);
  for (const char* uuid : {"small", "large"}) {
    const Workload& workload = workload_named(problem, uuid);
    int64_t rows = workload.axes.at("rows");
    for (int trial = 0; trial < 2; ++trial) {
      const TensorMap inputs = oracle.inputs(problem, workload, trial)->copy();
      const TensorMap expected = *oracle.expected(problem, workload, trial);
      const HostTensor& x = inputs.at("x");
      const HostTensor& weight = inputs.at("rms_norm_weight");
      const HostTensor& alpha = inputs.at("alpha");
      ASSERT_EQ(x.shape, (std::vector<int64_t>{rows, 4}));
      EXPECT_TRUE(alpha.shape.empty());  // a scalar, stored as a 0-D tensor
      EXPECT_EQ(alpha.dtype, DType::Float32);
      EXPECT_EQ(alpha.at(0), workload.inputs.at("alpha").scalar_value);
      EXPECT_EQ(values(weight), std::vector<double>(4, 1.0));  // *norm_weight -> ones
      const HostTensor& out = expected.at("out");
      ASSERT_EQ(out.shape, x.shape);
      for (int64_t i = 0; i < x.numel(); ++i) {
        float want = static_cast<float>(x.at(i)) * static_cast<float>(weight.at(i % 4)) *
                     static_cast<float>(alpha.at(0));
        EXPECT_FLOAT_EQ(static_cast<float>(out.at(i)), want) << uuid << " element " << i;
      }
    }
    EXPECT_NE(oracle.inputs(problem, workload, 0)->at("x").bytes,
              oracle.inputs(problem, workload, 1)->at("x").bytes);
  }

  // The same (workload, trial) gives the same bytes in another process and cache.
  Oracle other(options("other"));
  const Workload& small = workload_named(problem, "small");
  EXPECT_EQ(other.inputs(problem, small, 1)->at("x").bytes,
            oracle.inputs(problem, small, 1)->at("x").bytes);
  EXPECT_EQ(other.expected(problem, small, 1)->at("out").bytes,
            oracle.expected(problem, small, 1)->at("out").bytes);
}

TEST_F(PythonOracleTest, CorruptCacheFileIsReportedDeletedAndRegenerated) {
  Problem problem = fixture_problem("py_scale");
  Oracle oracle(options());
  oracle.prepare(problem, 1);
  auto dir = problem_cache(problem);
  const auto expected_files = files_ending(dir, ".expected.safetensors");
  ASSERT_EQ(expected_files.size(), 4u);  // trial 0 and its twin, for 2 workloads
  for (const auto& file : expected_files) {
    std::ofstream(file, std::ios::binary | std::ios::trunc) << "garbage";
  }
  const Workload& small = workload_named(problem, "small");
  std::string message = input_error_of([&] { oracle.expected(problem, small, 0); });
  EXPECT_NE(message.find(dir.string()), std::string::npos) << message;
  EXPECT_NE(message.find(".expected.safetensors"), std::string::npos) << message;
  EXPECT_EQ(files_ending(dir, ".expected.safetensors").size(), 3u);  // the corrupt one is gone

  oracle.prepare(problem, 1);
  EXPECT_EQ(oracle.python_runs(), 3);
  EXPECT_EQ(oracle.expected(problem, small, 0)->at("out").shape, (std::vector<int64_t>{2, 4}));
}

// Trials after the first draw structured inputs in turn (issue 24, class 5): rows offset by 100 x
// the draw's spread, magnitudes x 100; the reference's outputs are recomputed for them like for
// any draw.
TEST_F(PythonOracleTest, LaterTrialsDrawStructuredInputs) {
  Problem problem = fixture_problem("py_scale");
  Oracle oracle(options());
  oracle.prepare(problem, 3);
  const Workload& workload = workload_named(problem, "large");
  struct Moments {
    double mean = 0, spread = 0, largest = 0;
  };
  auto moments = [&](int trial) {
    const HostTensor& x = oracle.inputs(problem, workload, trial)->at("x");
    const double n = static_cast<double>(x.numel());
    Moments m;
    for (int64_t i = 0; i < x.numel(); ++i) {
      m.mean += x.at(i) / n;
      m.largest = std::max(m.largest, std::abs(x.at(i)));
    }
    for (int64_t i = 0; i < x.numel(); ++i) m.spread += (x.at(i) - m.mean) * (x.at(i) - m.mean);
    m.spread = std::sqrt(m.spread / (n - 1));
    return m;
  };
  EXPECT_LT(std::abs(moments(0).mean), 1.0);  // plain randn
  const Moments offset = moments(1);          // rows offset by 100 x the draw's spread
  EXPECT_NEAR(offset.mean, 100.0 * offset.spread, 1.0);
  EXPECT_GT(offset.mean, 50.0);
  EXPECT_GT(moments(2).largest, 50.0);  // magnitudes x 100
}

TEST_F(PythonOracleTest, NameHeuristicsShapeTheInputs) {
  Problem problem = fixture_problem("py_heuristics");
  Oracle oracle(options());
  const TensorMap inputs = oracle.inputs(problem, problem.workloads.front(), 0)->copy();
  EXPECT_EQ(values(inputs.at("input_layernorm_weight")), std::vector<double>(8, 1.0));
  EXPECT_EQ(values(inputs.at("attn_norm_bias")), std::vector<double>(8, 0.0));
  const HostTensor& mask = inputs.at("attention_mask");
  for (int64_t row = 0; row < 5; ++row) {
    for (int64_t column = 0; column < 5; ++column) {
      EXPECT_EQ(mask.at(row * 5 + column), column > row ? -FLT_MAX : 0.0) << row << "," << column;
    }
  }
  for (double value : values(inputs.at("rstd"))) EXPECT_GE(value, 0.1);
  for (double value : values(inputs.at("cos_cached"))) EXPECT_LE(std::abs(value), 1.0);
  const HostTensor& routing = inputs.at("routing_weights");
  for (int64_t row = 0; row < 5; ++row) {
    double sum = 0;
    for (int64_t column = 0; column < 8; ++column) sum += routing.at(row * 8 + column);
    EXPECT_NEAR(sum, 1.0, 1e-5);
  }
  EXPECT_EQ(inputs.at("q_proj").dtype, DType::BFloat16);
  EXPECT_EQ(values(oracle.expected(problem, problem.workloads.front(), 0)->at("out")),
            std::vector<double>(8, 1.0));
}

TEST_F(PythonOracleTest, CustomAndSafetensorsInputs) {
  Problem problem = fixture_problem("py_custom");
  Oracle oracle(options());
  oracle.prepare(problem, 1);

  const Workload& custom = workload_named(problem, "custom");
  EXPECT_EQ(values(oracle.inputs(problem, custom, 0)->at("idx")),
            (std::vector<double>{4, 3, 2, 1, 0}));
  EXPECT_EQ(values(oracle.expected(problem, custom, 0)->at("out")),
            (std::vector<double>{40, 30, 20, 10, 0}));

  const Workload& blob = workload_named(problem, "blob");
  const TensorMap inputs = oracle.inputs(problem, blob, 0)->copy();
  EXPECT_EQ(values(inputs.at("idx")), (std::vector<double>{3, 1, 2, 0}));
  std::vector<double> x = values(inputs.at("x"));
  EXPECT_EQ(values(oracle.expected(problem, blob, 0)->at("out")),
            (std::vector<double>{x[3], x[1], x[2], x[0]}));

  // A missing blob is the problem's fault, not the reference's: reported, never cached.
  auto error = oracle.reference_error(problem, workload_named(problem, "missing-blob"));
  ASSERT_TRUE(error.has_value());
  EXPECT_NE(error->find("absent.safetensors"), std::string::npos) << *error;
  EXPECT_TRUE(files_ending(problem_cache(problem), ".error.json").empty());
}

TEST_F(PythonOracleTest, Float8NeedsARecentTorch) {
  Problem problem = fixture_problem("py_fp8");
  Oracle oracle(options());
  oracle.prepare(problem, 1);
  const Workload& workload = problem.workloads.front();
  if (auto error = oracle.reference_error(problem, workload)) {
    EXPECT_NE(error->find("float8_e4m3fn needs torch >= 2.1"), std::string::npos) << *error;
    return;
  }
  std::vector<double> x = values(oracle.inputs(problem, workload, 0)->at("x"));
  for (double value : x) EXPECT_LE(std::abs(value), 2.0);
  EXPECT_EQ(values(oracle.expected(problem, workload, 0)->at("y")), x);
}

// torch < 2.8 has no float4_e2m1fn_x2: the oracle says which torch it needs. Newer torch draws
// the bytes (randn quantised to E2M1, two a byte) and stores them as safetensors "F4", whose
// header counts values; they come back here as n bytes whose nibbles the reference decoded.
TEST_F(PythonOracleTest, Float4InputsRoundTripOrNeedARecentTorch) {
  Problem problem = fixture_problem("py_fp4");
  Oracle oracle(options());
  oracle.prepare(problem, 1);
  const Workload& workload = problem.workloads.front();
  if (auto error = oracle.reference_error(problem, workload)) {
    EXPECT_NE(error->find("float4_e2m1fn_x2 needs torch >= 2.8"), std::string::npos) << *error;
    return;
  }
  const HostTensor x = oracle.inputs(problem, workload, 0)->at("x");
  ASSERT_EQ(x.dtype, DType::Float4E2M1FNx2);
  ASSERT_EQ(x.shape, (std::vector<int64_t>{512}));
  std::vector<double> decoded;
  int zeros = 0;
  for (const std::byte byte : x.bytes) {
    const auto bits = static_cast<uint8_t>(byte);
    for (const uint8_t code : {static_cast<uint8_t>(bits & 15), static_cast<uint8_t>(bits >> 4)}) {
      decoded.push_back(e2m1_to_float(code));
      zeros += (code & 7) == 0;
    }
  }
  EXPECT_EQ(values(oracle.expected(problem, workload, 0)->at("y")), decoded);
  // randn rounds to +-0 for |x| <= 0.25: about 20% of 1024 values, never all or none.
  EXPECT_GT(zeros, 100);
  EXPECT_LT(zeros, 330);
}

TEST_F(PythonOracleTest, CrashingReferenceFailsAloneAndWrongShapeIsReported) {
  Problem problem = fixture_problem("py_crash");
  Oracle oracle(options());
  std::vector<std::string> lines;
  oracle.report_progress([&](const std::string& line) { lines.push_back(line); });
  oracle.prepare(problem, 1);
  // Each workload's draws are told as they start and end, the crashed one's too.
  auto line_index = [&](const std::string& start) {
    const auto found = std::find_if(lines.begin(), lines.end(), [&](const std::string& line) {
      return line.rfind(start, 0) == 0;
    });
    return found == lines.end() ? -1 : static_cast<int>(found - lines.begin());
  };
  const std::string all = ::testing::PrintToString(lines);
  const int two_starts = line_index(
      "reference: workload two (n=2; 16 bytes of inputs and "
      "outputs): 1 draw...");
  const int two_ends = line_index("reference: workload two: 1 draw in ");
  EXPECT_GE(two_starts, 0) << all;
  EXPECT_GT(two_ends, two_starts) << all;
  EXPECT_GE(line_index("reference: workload three: 1 of 1 draw failed, "), 0) << all;
  EXPECT_GE(line_index("reference: workload five: 1 of 1 draw failed, "), 0) << all;
  EXPECT_GE(line_index("reference: workload four: 1 twin draw in "), 0) << all;
  // The rest went to a fresh interpreter; the twins of the good workloads to a third.
  EXPECT_EQ(oracle.python_runs(), 3);

  auto crashed = oracle.reference_error(problem, workload_named(problem, "three"));
  ASSERT_TRUE(crashed.has_value());
  // A SIGKILL the oracle did not send is explained, with the workload's size (3 + 3 floats).
  EXPECT_NE(crashed->find("killed by signal SIGKILL (Killed), most likely by the kernel's "
                          "out-of-memory killer: it peaked at "),
            std::string::npos)
      << *crashed;
  EXPECT_NE(crashed->find("its workload's inputs and outputs take 24 bytes"), std::string::npos)
      << *crashed;
  auto wrong = oracle.reference_error(problem, workload_named(problem, "five"));
  ASSERT_TRUE(wrong.has_value());
  EXPECT_NE(wrong->find("output 'y': expected shape [5], got [1]"), std::string::npos) << *wrong;
  for (const char* uuid : {"two", "four"}) {
    const Workload& workload = workload_named(problem, uuid);
    EXPECT_FALSE(oracle.reference_error(problem, workload).has_value()) << uuid;
    std::vector<double> x = values(oracle.inputs(problem, workload, 0)->at("x"));
    std::vector<double> y = values(oracle.expected(problem, workload, 0)->at("y"));
    ASSERT_EQ(x.size(), y.size());
    for (std::size_t i = 0; i < x.size(); ++i) EXPECT_EQ(y[i], 2 * x[i]);
  }
}

TEST_F(PythonOracleTest, BaselineTimingIsMeasuredOnceForAllWorkloads) {
  Problem problem = fixture_problem("py_scale");
  OracleOptions opts = options();
  opts.warmup = 1;
  opts.iterations = 2;
  Oracle oracle(opts);
  auto eager = oracle.reference_timing(problem, workload_named(problem, "small"), Baseline::Eager);
  ASSERT_TRUE(eager.has_value());
  EXPECT_EQ(eager->baseline, Baseline::Eager);
  ASSERT_EQ(eager->times_ns.size(), 2u);
  for (double time : eager->times_ns) EXPECT_GT(time, 0);
  EXPECT_NE(eager->note.find("eager"), std::string::npos) << eager->note;

  EXPECT_TRUE(oracle.reference_timing(problem, workload_named(problem, "large"), Baseline::Eager));
  const Workload& bad = workload_named(problem, "bad");
  EXPECT_FALSE(oracle.reference_timing(problem, bad, Baseline::Eager).has_value());
  EXPECT_NE(oracle.timing_unavailable_reason(problem, bad, Baseline::Eager).find("three rows"),
            std::string::npos);
  // Every workload timed in each of kBaselineProcesses fresh processes, the fastest kept.
  EXPECT_EQ(oracle.python_runs(), kBaselineProcesses);
  EXPECT_NE(eager->note.find("the fastest of 2 fresh processes"), std::string::npos) << eager->note;

  std::string description = oracle.description();
  EXPECT_EQ(description.rfind("python ", 0), 0u) << description;
  EXPECT_NE(description.find(", torch "), std::string::npos) << description;
  EXPECT_NE(description.find("(cpu)"), std::string::npos) << description;
  if (description.find("torch 1.") != std::string::npos) {
    const Workload& small = workload_named(problem, "small");
    EXPECT_FALSE(oracle.reference_timing(problem, small, Baseline::Compiled).has_value());
    EXPECT_NE(oracle.timing_unavailable_reason(problem, small, Baseline::Compiled)
                  .find("torch.compile unavailable: torch 1."),
              std::string::npos);
  }
}

// A problem whose reference computes in high precision may name the code a user would run as
// its baseline; that code is timed once it agrees with the reference, and refused otherwise.
TEST_F(PythonOracleTest, BaselineCodeIsTimedOnlyWhenItAgreesWithTheReference) {
  OracleOptions opts = options();
  opts.warmup = 1;
  opts.iterations = 2;
  Oracle oracle(opts);

  Problem agrees = with_baseline("agrees", "    return torch.mul(x, rms_norm_weight).mul(alpha)\n");
  auto timed = oracle.reference_timing(agrees, workload_named(agrees, "small"), Baseline::Eager);
  ASSERT_TRUE(timed.has_value()) << oracle.timing_unavailable_reason(
      agrees, workload_named(agrees, "small"), Baseline::Eager);
  EXPECT_NE(timed->note.find("the definition's baseline code"), std::string::npos) << timed->note;

  Problem wrong = with_baseline("wrong", "    return x * rms_norm_weight * alpha + 1\n");
  const Workload& small = workload_named(wrong, "small");
  EXPECT_FALSE(oracle.reference_timing(wrong, small, Baseline::Eager).has_value());
  EXPECT_NE(oracle.timing_unavailable_reason(wrong, small, Baseline::Eager)
                .find("the baseline code disagrees with the reference on 'out'"),
            std::string::npos)
      << oracle.timing_unavailable_reason(wrong, small, Baseline::Eager);

  // Code that rounds more than the oracle (here 5% off everywhere, as a bfloat16 chain might
  // be) is timed only under the looser tolerance its definition declares for it, and the note
  // says so; code that computes something else stays refused under it.
  const std::string rough = "    return x * rms_norm_weight * alpha * 1.05\n";
  Problem strict = with_baseline("strict", rough);
  EXPECT_FALSE(oracle.reference_timing(strict, workload_named(strict, "small"), Baseline::Eager)
                   .has_value());
  const OrderedJson loose = {{"max_atol", 0.1}, {"max_rtol", 0.1}};
  Problem declared = with_baseline("declared", rough, loose);
  const Workload& declared_small = workload_named(declared, "small");
  auto loosely = oracle.reference_timing(declared, declared_small, Baseline::Eager);
  ASSERT_TRUE(loosely.has_value())
      << oracle.timing_unavailable_reason(declared, declared_small, Baseline::Eager);
  EXPECT_NE(loosely->note.find("held to its baseline_tolerance (atol 0.1, rtol 0.1, 99% matched)"),
            std::string::npos)
      << loosely->note;
  Problem still_wrong =
      with_baseline("still_wrong", "    return x * rms_norm_weight * alpha + 1\n", loose);
  EXPECT_FALSE(
      oracle.reference_timing(still_wrong, workload_named(still_wrong, "small"), Baseline::Eager)
          .has_value());

  Problem raises = with_baseline("raises", "    raise RuntimeError('no kernel for this')\n");
  const Workload& first = workload_named(raises, "small");
  EXPECT_FALSE(oracle.reference_timing(raises, first, Baseline::Eager).has_value());
  const std::string why = oracle.timing_unavailable_reason(raises, first, Baseline::Eager);
  EXPECT_NE(why.find("no kernel for this (baseline line 6)"), std::string::npos) << why;
}

// A baseline is timed by the candidates' rule: a slow call is timed as often as the budget
// holds (never below the least), and warm-up calls that outlast their limit (a compilation
// that never ends) make it unavailable instead of holding the session.
TEST_F(PythonOracleTest, SlowBaselinesAreTimedWithinTheBudgetAndTheWarmUpLimit) {
  const std::string correct = "    return torch.mul(x, rms_norm_weight).mul(alpha)\n";
  OracleOptions opts = options();
  opts.warmup = 1;
  opts.iterations = 8;
  opts.min_iterations = 3;
  opts.timing_budget_s = 0.5;
  opts.warmup_limit_s = 30;
  Oracle oracle(opts);
  Problem slow = with_baseline("slow", "    time.sleep(0.2)\n" + correct);
  const Workload& small = workload_named(slow, "small");
  auto timed = oracle.reference_timing(slow, small, Baseline::Eager);
  ASSERT_TRUE(timed.has_value()) << oracle.timing_unavailable_reason(slow, small, Baseline::Eager);
  EXPECT_EQ(timed->times_ns.size(), 3u);  // 0.5 s holds two 0.2 s calls: the least, 3
  for (double ns : timed->times_ns) EXPECT_GE(ns, 0.2e9);
  EXPECT_NE(timed->note.find("3 timed calls, not 8: the timing budget is 0.5 s"), std::string::npos)
      << timed->note;

  Problem fast = with_baseline("fast", correct);
  auto all = oracle.reference_timing(fast, workload_named(fast, "small"), Baseline::Eager);
  ASSERT_TRUE(all.has_value());
  EXPECT_EQ(all->times_ns.size(), 8u);
  EXPECT_EQ(all->note.find("timed calls, not"), std::string::npos) << all->note;

  // The first call agrees with the reference; the warm-up after it never ends.
  opts.warmup_limit_s = 1;
  opts.cache_dir = temp_ / "limited";
  Oracle limited(opts);
  Problem hangs = with_baseline("hangs",
                                "    run.calls = getattr(run, 'calls', 0) + 1\n"
                                "    if run.calls > 1:\n"
                                "        time.sleep(3600)\n" +
                                    correct);
  const Workload& first = workload_named(hangs, "small");
  const auto started = std::chrono::steady_clock::now();
  EXPECT_FALSE(limited.reference_timing(hangs, first, Baseline::Eager).has_value());
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(60));
  const std::string why = limited.timing_unavailable_reason(hangs, first, Baseline::Eager);
  EXPECT_NE(why.find("the 1 warm-up calls took longer than 1 s (--baseline-warmup-limit)"),
            std::string::npos)
      << why;
}

}  // namespace
}  // namespace kernelarc
