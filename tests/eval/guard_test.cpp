// The guard on the bundled CPU problems: honest solutions pass, each broken or cheating solution
// in tests/data/guard is rejected with the status its README promises, and the cheats that the
// guard neutralizes instead pass.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <string>
#include <utility>

#include "backend/calibrate.h"
#include "core/error.h"
#include "core/problem.h"
#include "eval/guard.h"
#include "eval/guard_harness.h"
#include "source_dir.h"

namespace kernelarc {
namespace {

void tune(GuardOptions& options) {
  options.call_timeout = std::chrono::milliseconds(2000);
  options.iterations = 12;
  options.timing_budget_s = 0.2;
  options.memory_limit_bytes = std::size_t{2} << 30;
  options.time_baselines = false;
  options.auto_calibrate = false;  // calibrated once where a test needs the floor
}

class GuardTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    harness_ =
        std::make_unique<testing::GuardHarness>(kSource / "problems/cpu/rmsnorm_f32", "cpu", tune);
  }
  static void TearDownTestSuite() { harness_.reset(); }

  /// The smallest workload keeps each case fast; every case sees the same one unless it needs
  /// `min_elements` elements.
  static Trace evaluate_case(const std::string& name, int64_t min_elements = 0) {
    return harness_->evaluate(kSource / "tests/data/guard" / name,
                              harness_->pick_workload_of_at_least(min_elements));
  }

  static std::unique_ptr<testing::GuardHarness> harness_;
};

std::unique_ptr<testing::GuardHarness> GuardTest::harness_;

TEST_F(GuardTest, BundledSolutionsPassEveryWorkload) {
  for (const char* variant : {"naive", "optimized"}) {
    const auto solution = load_solution(kSource / "problems/cpu/rmsnorm_f32/solutions" / variant);
    for (const auto& trace : harness_->guard().evaluate(harness_->problem(), solution)) {
      EXPECT_EQ(trace.status, EvalStatus::Passed) << variant << ": " << trace.log;
      EXPECT_EQ(trace.trials_passed, 10);
      EXPECT_TRUE(trace.audit_passed);
      ASSERT_TRUE(trace.latency_ms.has_value());
      EXPECT_GE(trace.latency_ms->samples, harness_->guard().options().min_iterations);
      EXPECT_LE(trace.latency_ms->ci_low, trace.latency_ms->median);
      EXPECT_GE(trace.latency_ms->ci_high, trace.latency_ms->median);
    }
  }
}

int64_t elements(const Workload& workload) {
  int64_t product = 1;
  for (const auto& [name, value] : workload.axes) product *= value;
  return product;
}

// Every bundled CPU solution passes on its problem's smallest workload: the checks below reject
// cheats, not honest kernels.
TEST(GuardBundled, EveryCpuSolutionPassesItsSmallestWorkload) {
  int solutions = 0;
  for (const auto& problem_dir : std::filesystem::directory_iterator(kSource / "problems/cpu")) {
    // A problem may ship without a hand-written solution (moe_backward_gelu_tanh_f32).
    if (!std::filesystem::exists(problem_dir.path() / "definition.json") ||
        !std::filesystem::is_directory(problem_dir.path() / "solutions"))
      continue;
    // The oracle prepares every workload of its problem: give it only the one evaluated.
    Problem problem = load_problem(problem_dir.path());
    problem.workloads = {*std::min_element(
        problem.workloads.begin(), problem.workloads.end(),
        [](const Workload& a, const Workload& b) { return elements(a) < elements(b); })};
    testing::GuardHarness trimmed(problem, "cpu", tune);
    for (const auto& solution_dir :
         std::filesystem::directory_iterator(problem_dir.path() / "solutions")) {
      ++solutions;
      const auto trace = trimmed.evaluate(solution_dir.path(), problem.workloads.front());
      EXPECT_EQ(status_name(trace.status), status_name(EvalStatus::Passed))
          << solution_dir.path() << ": " << trace.log;
      EXPECT_TRUE(trace.audit_passed) << solution_dir.path();
    }
  }
  EXPECT_GT(solutions, 0);
}

/// What a case needs of the machine beyond the guard itself.
enum class Needs {
  Nothing,
  Landlock,  ///< the refusal comes from the worker's Landlock rules, which old kernels lack
};

struct Rejection {
  const char* name;
  EvalStatus status;
  const char* log_fragment;
  Needs needs = Needs::Nothing;
  /// The case's cheat only shows on inputs of at least this many elements.
  int64_t min_elements = 0;
};

void PrintTo(const Rejection& rejection, std::ostream* out) {
  *out << rejection.name;
}

class GuardRejects : public GuardTest, public ::testing::WithParamInterface<Rejection> {};

TEST_P(GuardRejects, WithTheRightStatus) {
  const auto& expected = GetParam();
  const auto trace = evaluate_case(expected.name, expected.min_elements);
  if (expected.needs == Needs::Landlock) {
    // A missing entry is a guard that no longer reports its sandbox: a failure, not a skip.
    ASSERT_TRUE(trace.environment.contains("sandbox")) << trace.environment.dump();
    const auto& sandbox = trace.environment["sandbox"];
    if (sandbox.value("landlock_abi", 0) == 0) {
      GTEST_SKIP() << "the worker runs without Landlock: " << sandbox.value("landlock_note", "");
    }
  }
  EXPECT_EQ(status_name(trace.status), status_name(expected.status)) << trace.log;
  EXPECT_NE(trace.log.find(expected.log_fragment), std::string::npos) << trace.log;
}

INSTANTIATE_TEST_SUITE_P(
    BrokenSolutions, GuardRejects,
    ::testing::Values(Rejection{"wrong_result", EvalStatus::IncorrectNumerical, "exceed atol"},
                      Rejection{"partial_write", EvalStatus::IncorrectNumerical, "never written"},
                      Rejection{"nan_output", EvalStatus::IncorrectNumerical, "NaN"},
                      Rejection{"all_zero", EvalStatus::IncorrectNumerical, "all zeros"},
                      Rejection{"modifies_input", EvalStatus::RewardHack, "modified its input"},
                      Rejection{"crash", EvalStatus::RuntimeError, "SIGSEGV"},
                      Rejection{"hang", EvalStatus::Timeout, "did not finish"},
                      Rejection{"compile_error", EvalStatus::CompileError, "error"},
                      Rejection{"returns_error", EvalStatus::RuntimeError, "unsupported shape"},
                      Rejection{"wrong_after_first_calls", EvalStatus::IncorrectNumerical, "audit"},
                      Rejection{"exit_mid_call", EvalStatus::RuntimeError, "exit"},
                      Rejection{"huge_allocation", EvalStatus::RuntimeError, "memory"}),
    [](const auto& info) { return std::string(info.param.name); });

// Solutions that try to get a better score than their work earns.
INSTANTIATE_TEST_SUITE_P(
    Cheats, GuardRejects,
    ::testing::Values(
        Rejection{"cache_by_pointer", EvalStatus::IncorrectNumerical, "output 'output'"},
        Rejection{"cache_by_shape", EvalStatus::IncorrectNumerical, "trial 1"},
        // A row of the smallest workload is 3 elements: 64 samples would cover nearly all of it.
        Rejection{"cache_by_sampled_hash", EvalStatus::IncorrectNumerical, "twin audit",
                  Needs::Nothing, 4096},
        Rejection{"stale_output", EvalStatus::IncorrectNumerical, "trial 1"},
        Rejection{"correct_only_on_seen_inputs", EvalStatus::IncorrectNumerical, "audit at"},
        Rejection{"phase_probe_environment", EvalStatus::IncorrectNumerical, "audit at"},
        Rejection{"repoints_output_descriptor", EvalStatus::IncorrectNumerical, "never written"},
        Rejection{"computes_in_input_buffer", EvalStatus::RewardHack, "modified its input"},
        Rejection{"copies_input_to_output", EvalStatus::IncorrectNumerical, "exceed"},
        Rejection{"lower_precision", EvalStatus::IncorrectNumerical, "exceed"},
        Rejection{"writes_past_output", EvalStatus::RuntimeError, "past the end"},
        Rejection{"writes_before_output", EvalStatus::RuntimeError, "before the start"},
        Rejection{"inf_output", EvalStatus::IncorrectNumerical, "infinite"},
        Rejection{"background_thread_output", EvalStatus::IncorrectNumerical, "never written"},
        Rejection{"lingering_thread", EvalStatus::RewardHack, "outlived"},
        Rejection{"patches_clock_got", EvalStatus::RewardHack, "modified the worker"},
        Rejection{"patches_libc_code", EvalStatus::RewardHack, "modified the worker"},
        Rejection{"shadows_clock_symbol", EvalStatus::RewardHack, "shadows"},
        Rejection{"fork_child", EvalStatus::RuntimeError, "forbidden system call"},
        Rejection{"exec_program", EvalStatus::RuntimeError, "forbidden system call"},
        Rejection{"reads_oracle_cache", EvalStatus::RuntimeError, "Permission denied",
                  Needs::Landlock},
        Rejection{"writes_oracle_cache", EvalStatus::RuntimeError, "Permission denied",
                  Needs::Landlock},
        Rejection{"reads_parent_memory", EvalStatus::RuntimeError, "Permission denied",
                  Needs::Landlock},
        Rejection{"kills_parent", EvalStatus::RuntimeError, "not permitted"},
        Rejection{"abort_mid_call", EvalStatus::RuntimeError, "SIGABRT"},
        Rejection{"throws_exception", EvalStatus::RuntimeError, "exception"},
        Rejection{"exits_at_load", EvalStatus::RuntimeError, "load"},
        Rejection{"wrong_layout", EvalStatus::IncorrectNumerical, "exceed"},
        Rejection{"uninitialized_output", EvalStatus::IncorrectNumerical, "NaN"},
        // Issue 24's classes, one case each (reads_other_workspace has a test of its own).
        Rejection{"forges_reported_time", EvalStatus::RewardHack, "not the calls' real times"},
        Rejection{"skips_unchecked_calls", EvalStatus::IncorrectNumerical, "audit at"},
        Rejection{"huge_error_in_few_elements", EvalStatus::IncorrectNumerical, "error cap",
                  Needs::Nothing, 4096},
        Rejection{"stale_small_region", EvalStatus::IncorrectNumerical, "error cap", Needs::Nothing,
                  4096},
        Rejection{"patches_other_library", EvalStatus::RewardHack, "modified the worker"},
        Rejection{"precomputes_in_helper_thread", EvalStatus::RewardHack,
                  "outside the timed call"}),
    [](const auto& info) { return std::string(info.param.name); });

// Cheats the guard neutralizes rather than catches: they pass because they gain nothing.
class GuardNeutralizes : public GuardTest, public ::testing::WithParamInterface<const char*> {};

TEST_P(GuardNeutralizes, AndPasses) {
  const auto trace = evaluate_case(GetParam());
  EXPECT_EQ(status_name(trace.status), status_name(EvalStatus::Passed)) << trace.log;
  EXPECT_EQ(trace.trials_passed, 10);
  EXPECT_TRUE(trace.audit_passed);
}

INSTANTIATE_TEST_SUITE_P(Cheats, GuardNeutralizes,
                         ::testing::Values("cache_by_content_hash", "repeated_input_probe",
                                           "derived_input_probe", "phase_by_call_timing"),
                         [](const auto& info) { return std::string(info.param); });

// Honest solutions of unusual shapes that the checks against helper threads, stale state and
// untimed work must not refuse (issue 24: the red team found none refused; keep it so).
class GuardAccepts : public GuardTest, public ::testing::WithParamInterface<const char*> {};

TEST_P(GuardAccepts, AnUnusualHonestSolution) {
  for (const int64_t min_elements : {int64_t{0}, int64_t{4096}}) {
    const auto trace = evaluate_case(GetParam(), min_elements);
    EXPECT_EQ(status_name(trace.status), status_name(EvalStatus::Passed)) << trace.log;
    EXPECT_TRUE(trace.audit_passed);
  }
}

INSTANTIATE_TEST_SUITE_P(Legitimate, GuardAccepts,
                         ::testing::Values("legit_thread_per_call", "legit_persistent_pool",
                                           "legit_static_table", "legit_workspace_buffer",
                                           "legit_streaming_stores"),
                         [](const auto& info) { return std::string(info.param); });

// Another workspace's oracle cache, wherever it lies, is as unreadable as the one in use: the
// worker reads only what a kernel needs (issue 24, class 9).
TEST_F(GuardTest, AnotherWorkspaceIsUnreadable) {
  const std::filesystem::path other = "/tmp/kernelarc-other-workspace-" + std::to_string(getpid());
  std::filesystem::create_directories(other / "oracle");
  std::ofstream(other / "oracle/planted.expected.safetensors") << "the answers";
  const auto trace = evaluate_case("reads_other_workspace");
  std::filesystem::remove_all(other);
  ASSERT_TRUE(trace.environment.contains("sandbox")) << trace.environment.dump();
  if (trace.environment["sandbox"].value("landlock_abi", 0) == 0)
    GTEST_SKIP() << "the worker runs without Landlock";
  EXPECT_EQ(status_name(trace.status), status_name(EvalStatus::RuntimeError)) << trace.log;
  EXPECT_NE(trace.log.find("Permission denied"), std::string::npos) << trace.log;
}

// Every timed call runs on a draw of its own and is checked, and the parent's bounds on the
// reported times were computed (issue 24, classes 1, 2 and 7).
TEST_F(GuardTest, EveryTimedCallIsCheckedOnAFreshDraw) {
  const auto trace = harness_->evaluate(kSource / "problems/cpu/rmsnorm_f32/solutions/naive",
                                        harness_->pick_workload_of_at_least(0));
  ASSERT_EQ(trace.status, EvalStatus::Passed) << trace.log;
  ASSERT_TRUE(trace.latency_ms.has_value());
  EXPECT_EQ(trace.extra.at("timed_draws").get<int>(), trace.latency_ms->samples);
  const auto& checks = trace.extra.at("timing_checks");
  ASSERT_TRUE(checks.is_object()) << checks.dump();
  // A null Run request is a fraction of a millisecond, and on a loaded machine the calling
  // thread's wait for a core, which is subtracted, can be all of it.
  EXPECT_GE(checks.at("null_request_wall_ms").get<double>(), 0.0);
  EXPECT_GT(checks.at("null_request_cpu_ms").get<double>(), 0.0);
  EXPECT_GT(checks.at("request_wall_ms").get<double>(), 0.0);
}

// Screening (GuardOptions::checked_timed_calls): an honest kernel passes with three timed
// calls checked (four with the twin audit) and every timed call a sample; a kernel that stops
// working after its first calls is wrong in nine of the ten timed calls, so any three checked
// positions find it.
TEST_F(GuardTest, ScreeningChecksSomeTimedCallsAndStillCatchesSkippedWork) {
  testing::GuardHarness screening(
      kSource / "problems/cpu/rmsnorm_f32", "cpu",
      [](GuardOptions& options) {
        tune(options);
        options.checked_timed_calls = 3;
      },
      *harness_);
  const Workload workload = screening.pick_workload_of_at_least(0);
  const auto honest =
      screening.evaluate(kSource / "problems/cpu/rmsnorm_f32/solutions/naive", workload);
  ASSERT_EQ(status_name(honest.status), status_name(EvalStatus::Passed)) << honest.log;
  const int twin = honest.extra.at("twin_audit").get<std::string>() == "passed" ? 1 : 0;
  EXPECT_EQ(honest.extra.at("checked_calls").get<int>(), 3 + twin);
  ASSERT_TRUE(honest.latency_ms.has_value());
  EXPECT_EQ(honest.latency_ms->samples, honest.extra.at("timed_draws").get<int>());
  const auto skipping =
      screening.evaluate(kSource / "tests/data/guard/wrong_after_first_calls", workload);
  EXPECT_EQ(status_name(skipping.status), status_name(EvalStatus::IncorrectNumerical))
      << skipping.log;
}

// The speed-of-light check itself: an honest kernel timed against a fabricated calibration whose
// bandwidth is absurdly low, so that the bound is far above any real time.
TEST_F(GuardTest, FasterThanTheSpeedOfLightIsARewardHack) {
  testing::GuardHarness fabricated(kSource / "problems/cpu/rmsnorm_f32", "cpu", tune, *harness_);
  Calibration calibration;
  calibration.device = "cpu";
  calibration.description = "fabricated by guard_test";
  calibration.measured_at = utc_timestamp();
  calibration.copy_bandwidth_gbs = 1e-6;  // a thousand bytes a second
  calibration.fp32_fma_tflops = 1.0;
  save_calibration(fabricated.workspace(), calibration);
  const auto trace = fabricated.evaluate(kSource / "tests/data/guard/below_speed_of_light",
                                         fabricated.pick_workload(false));
  EXPECT_EQ(status_name(trace.status), status_name(EvalStatus::RewardHack)) << trace.log;
  EXPECT_NE(trace.log.find("speed-of-light"), std::string::npos) << trace.log;
  ASSERT_TRUE(trace.sol_ms.has_value());
  EXPECT_GT(*trace.sol_ms, 100.0);
}

// Without a calibration the guard measures the device first, so that the speed-of-light floor
// bounds every time it reports (issue 24, class 3: uncalibrated, a forged 500x speedup passed).
TEST_F(GuardTest, AnUncalibratedWorkspaceIsCalibratedFirst) {
  testing::GuardHarness uncalibrated(
      kSource / "problems/cpu/rmsnorm_f32", "cpu",
      [](GuardOptions& options) {
        tune(options);
        options.auto_calibrate = true;
      },
      *harness_);
  ASSERT_FALSE(load_calibration(uncalibrated.workspace(), "cpu").has_value());
  const auto trace = uncalibrated.evaluate(kSource / "problems/cpu/rmsnorm_f32/solutions/naive",
                                           uncalibrated.pick_workload(false));
  EXPECT_EQ(status_name(trace.status), status_name(EvalStatus::Passed)) << trace.log;
  EXPECT_TRUE(trace.sol_ms.has_value()) << trace.sol_note;
  EXPECT_TRUE(load_calibration(uncalibrated.workspace(), "cpu").has_value());
}

// Structured draws beside randn (issue 24, class 5): kernels that are right on random-normal
// inputs and wrong on inputs users have (large logits, rows offset by 100 x their spread) fail.
TEST(GuardStructuredInputs, NumericallyFragileKernelsFail) {
  for (const auto& [problem_name, case_name] :
       {std::pair{"softmax_f32", "softmax_without_max"},
        std::pair{"layernorm_f32", "layernorm_one_pass_variance"}}) {
    Problem problem = load_problem(kSource / "problems/cpu" / problem_name);
    problem.workloads = {*std::min_element(
        problem.workloads.begin(), problem.workloads.end(),
        [](const Workload& a, const Workload& b) { return elements(a) < elements(b); })};
    testing::GuardHarness trimmed(problem, "cpu", tune);
    const auto trace =
        trimmed.evaluate(kSource / "tests/data/guard" / case_name, problem.workloads.front());
    EXPECT_EQ(status_name(trace.status), status_name(EvalStatus::IncorrectNumerical))
        << case_name << ": " << trace.log;
  }
}

// The other side of the structured draws: the bundled layer norms are honest and must pass them
// at the problem's 1e-4 on its widest rows (4096), where a float sum of rows offset far from zero
// loses the mean's low bits (the naive one sums in double, the optimized one around the row's
// first value).
TEST(GuardStructuredInputs, BundledLayerNormsPassOnTheirWidestRows) {
  Problem problem = load_problem(kSource / "problems/cpu/layernorm_f32");
  const Workload widest = *std::min_element(
      problem.workloads.begin(), problem.workloads.end(), [](const Workload& a, const Workload& b) {
        const int64_t wa = a.axes.at("hidden_size"), wb = b.axes.at("hidden_size");
        return wa != wb ? wa > wb : elements(a) < elements(b);
      });
  problem.workloads = {widest};
  testing::GuardHarness trimmed(problem, "cpu", tune);
  for (const char* variant : {"naive", "optimized"}) {
    const auto trace = trimmed.evaluate(kSource / "problems/cpu/layernorm_f32/solutions" / variant,
                                        problem.workloads.front());
    EXPECT_EQ(status_name(trace.status), status_name(EvalStatus::Passed))
        << variant << ": " << trace.log;
  }
}

// A slow evaluation must show where its time went: drawing and writing inputs, the worker's
// requests (with the host link's copies inside them) and the checks, all within the phases.
TEST_F(GuardTest, TraceAccountsForWhereTheGuardsTimeWent) {
  const auto trace = harness_->evaluate(kSource / "problems/cpu/rmsnorm_f32/solutions/naive",
                                        harness_->pick_workload_of_at_least(0));
  ASSERT_EQ(trace.status, EvalStatus::Passed) << trace.log;
  const auto& seconds = trace.extra.at("guard_seconds");
  const auto& parts = seconds.at("parts");
  for (const char* part : {"inputs", "worker", "host_link", "checks"})
    EXPECT_GT(parts.at(part).get<double>(), 0.0) << part;
  EXPECT_LE(parts.at("host_link").get<double>(), parts.at("worker").get<double>());
  const double in_parts = parts.at("inputs").get<double>() + parts.at("worker").get<double>() +
                          parts.at("checks").get<double>();
  EXPECT_LE(in_parts, seconds.at("correctness").get<double>() + seconds.at("timing").get<double>());
}

TEST_F(GuardTest, SolutionForAnotherDefinitionIsAnInputError) {
  auto solution = load_solution(kSource / "problems/cpu/rmsnorm_f32/solutions/naive");
  solution.definition = "softmax_f32";
  EXPECT_THROW(harness_->guard().evaluate(harness_->problem(), solution), InputError);
}

}  // namespace
}  // namespace kernelarc
