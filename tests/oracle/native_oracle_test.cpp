// The oracle with a native C++ reference (tests/data/oracle/native_scale): inputs generated in
// C++, expected outputs from the compiled reference run in a worker, no Python anywhere.
#include <gtest/gtest.h>

#include "oracle/oracle.h"
#include "oracle_test_support.h"

namespace kernelarc {
namespace {

using namespace oracle_testing;

class NativeOracleTest : public ::testing::Test {
 protected:
  OracleOptions options(const std::string& cache = "oracle") const {
    OracleOptions result;
    result.cache_dir = temp_ / cache;
    result.worker_executable = KERNELARC_BINARY;
    result.warmup = 1;
    result.iterations = 3;
    return result;
  }

  TempDir temp_;
  // Any attempt to start Python would fail loudly.
  ScopedEnv no_python_{"KERNELARC_PYTHON", "/nonexistent/bin/python3"};
  Problem problem_ = fixture_problem("native_scale");
};

TEST_F(NativeOracleTest, PrepareComputesAndCachesWithoutPython) {
  Oracle oracle(options());
  oracle.prepare(problem_, 2);
  EXPECT_EQ(oracle.python_runs(), 0);
  EXPECT_EQ(oracle.description(), "native reference");

  auto dir = temp_ / "oracle" / problem_.definition.name;
  auto expected_files = files_ending(dir, ".expected.safetensors");
  ASSERT_EQ(expected_files.size(), 6u);  // 2 good workloads x (2 trials + the twin)
  EXPECT_EQ(files_ending(dir, ".error.json").size(), 2u);
  auto written = std::filesystem::last_write_time(expected_files.front());

  for (const char* uuid : {"small", "large"}) {
    const Workload& workload = workload_named(problem_, uuid);
    for (int trial = 0; trial < 2; ++trial) {
      const TensorMap inputs = oracle.inputs(problem_, workload, trial)->copy();
      const HostTensor& x = inputs.at("x");
      const HostTensor& weight = inputs.at("rms_norm_weight");
      const HostTensor& alpha = inputs.at("alpha");
      EXPECT_EQ(values(weight), std::vector<double>(4, 1.0));
      EXPECT_TRUE(alpha.shape.empty());
      EXPECT_EQ(alpha.at(0), workload.inputs.at("alpha").scalar_value);
      const TensorMap expected = *oracle.expected(problem_, workload, trial);
      const HostTensor& out = expected.at("out");
      ASSERT_EQ(out.shape, x.shape);
      for (int64_t i = 0; i < x.numel(); ++i) {
        float want = static_cast<float>(x.at(i)) * static_cast<float>(weight.at(i % 4)) *
                     static_cast<float>(alpha.at(0));
        EXPECT_EQ(static_cast<float>(out.at(i)), want) << uuid << " element " << i;
      }
    }
    EXPECT_NE(oracle.inputs(problem_, workload, 0)->at("x").bytes,
              oracle.inputs(problem_, workload, 1)->at("x").bytes);
  }

  oracle.prepare(problem_, 2);
  EXPECT_EQ(std::filesystem::last_write_time(expected_files.front()), written);

  Oracle other(options("other"));
  const Workload& small = workload_named(problem_, "small");
  EXPECT_EQ(other.inputs(problem_, small, 1)->at("x").bytes,
            oracle.inputs(problem_, small, 1)->at("x").bytes);
}

TEST_F(NativeOracleTest, FailingReferenceReportsItsMessage) {
  Oracle oracle(options());
  oracle.prepare(problem_, 1);
  auto error = oracle.reference_error(problem_, workload_named(problem_, "bad"));
  ASSERT_TRUE(error.has_value());
  EXPECT_NE(error->find("three rows are not supported"), std::string::npos) << *error;
  EXPECT_FALSE(oracle.reference_error(problem_, workload_named(problem_, "small")).has_value());
}

TEST_F(NativeOracleTest, BaselineIsTimedInTheWorker) {
  Oracle oracle(options());
  const Workload& small = workload_named(problem_, "small");
  auto eager = oracle.reference_timing(problem_, small, Baseline::Eager);
  ASSERT_TRUE(eager.has_value());
  EXPECT_EQ(eager->times_ns.size(), 3u);
  EXPECT_NE(eager->note.find("native reference"), std::string::npos) << eager->note;
  EXPECT_FALSE(oracle.reference_timing(problem_, small, Baseline::Compiled).has_value());
  EXPECT_NE(
      oracle.timing_unavailable_reason(problem_, small, Baseline::Compiled).find("torch.compile"),
      std::string::npos);
}

}  // namespace
}  // namespace kernelarc
