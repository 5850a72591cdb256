// The guard on the bundled CPU problems: honest solutions pass, each broken or cheating solution
// in tests/data/guard is rejected with the status its README promises, and the cheats that the
// guard neutralizes instead pass.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <ostream>
#include <string>

#include "backend/calibrate.h"
#include "core/error.h"
#include "core/problem.h"
#include "eval/guard.h"
#include "eval/guard_harness.h"

namespace kernelarc {
namespace {

const std::filesystem::path kSource = KERNELARC_SOURCE_DIR;

void tune(GuardOptions& options) {
  options.call_timeout = std::chrono::milliseconds(2000);
  options.iterations = 12;
  options.timing_budget_s = 0.2;
  options.memory_limit_bytes = std::size_t{2} << 30;
  options.time_baselines = false;
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
      EXPECT_GE(trace.latency_ms->samples, 10);
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
    if (!std::filesystem::exists(problem_dir.path() / "definition.json")) continue;
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
        Rejection{"cache_by_pointer", EvalStatus::IncorrectNumerical, "audit at"},
        Rejection{"cache_by_shape", EvalStatus::IncorrectNumerical, "trial 1"},
        // A row of the smallest workload is 3 elements: 64 samples would cover nearly all of it.
        Rejection{"cache_by_sampled_hash", EvalStatus::IncorrectNumerical, "twin audit",
                  Needs::Nothing, 4096},
        Rejection{"stale_output", EvalStatus::IncorrectNumerical, "trial 1"},
        Rejection{"correct_only_on_seen_inputs", EvalStatus::IncorrectNumerical, "audit at"},
        Rejection{"phase_by_call_timing", EvalStatus::IncorrectNumerical, "audit"},
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
        Rejection{"uninitialized_output", EvalStatus::IncorrectNumerical, "NaN"}),
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
                         ::testing::Values("cache_by_content_hash", "repeated_input_probe"),
                         [](const auto& info) { return std::string(info.param); });

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
