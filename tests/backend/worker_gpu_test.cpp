// The worker on a real GPU: a device-only (NVRTC) candidate loaded through its launch plan, with
// the kernels' resources and the GPU's status in the result. Every test here skips itself where
// no CUDA device can be used.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>

#include "backend/cuda_test_support.h"
#include "backend/worker/worker.h"

namespace kernelarc {
namespace {

constexpr int64_t kCount = 1000;  // not a multiple of the block: the kernel's bound check matters

class GpuWorker : public ::testing::Test {
 protected:
  void SetUp() override {
    KERNELARC_REQUIRE_GPU();
    WorkerOptions options;
    options.executable = KERNELARC_BINARY;
    options.device = "cuda:0";
    options.call_timeout = std::chrono::seconds(10);
    worker_ = std::make_unique<Worker>(options);
  }

  /// Compiles add_one for the worker's GPU and loads its launch plan.
  ExecuteResult load_add_one() {
    std::string arch = worker_->device_arch();
    EXPECT_EQ(arch.rfind("sm_", 0), 0u) << arch;
    CudaCompileOptions options;
    options.cache_dir = cache_.path();
    options.device_arch = arch;
    const CompileResult compiled = compile_cuda_solution(
        testing::add_one_solution(), testing::add_one_problem().definition, options);
    EXPECT_TRUE(compiled.ok) << compiled.log;
    return worker_->load(compiled.library, "ignored for a launch plan");
  }

  /// x[i] = i / 2 in the arena, y of `output_shape` poisoned.
  ExecuteRequest add_one_request(std::vector<int64_t> output_shape = {kCount}) {
    ExecuteRequest request;
    request.inputs = {{DType::Float32, {kCount}, 0}};
    request.outputs = {{DType::Float32, std::move(output_shape), kCount * sizeof(float)}};
    request.output_poison = {{0xAB, 0xCD, 0xEF, 0x7F}};
    request.warmup = 1;
    request.iterations = 3;
    std::span<std::byte> arena = worker_->arena(2 * kCount * sizeof(float));
    auto* x = reinterpret_cast<float*>(arena.data());
    for (int64_t i = 0; i < kCount; ++i) x[i] = 0.5f * static_cast<float>(i);
    return request;
  }

  testing::TempDir cache_;
  std::unique_ptr<Worker> worker_;
};

TEST_F(GpuWorker, RunsAnNvrtcCandidateAndReportsItsKernelsAndTheGpu) {
  ExecuteResult loaded = load_add_one();
  ASSERT_EQ(loaded.outcome, CallOutcome::Ok) << loaded.message;
  ExecuteRequest request = add_one_request();
  ExecuteResult result = worker_->execute(request);
  ASSERT_EQ(result.outcome, CallOutcome::Ok) << result.message << result.log_tail;
  EXPECT_EQ(result.times_ns.size(), 3u);

  const auto* arena = reinterpret_cast<const float*>(worker_->arena(0).data());
  for (int64_t i = 0; i < kCount; ++i) ASSERT_EQ(arena[kCount + i], arena[i] + 1.0f) << "at " << i;
  EXPECT_EQ(arena[10], 5.0f);  // the input came back unchanged

  ASSERT_FALSE(result.kernels.empty()) << result.clock;
  const nlohmann::json& kernel = result.kernels[0];
  EXPECT_EQ(kernel["name"], "add_one");
  EXPECT_EQ(kernel["grid"], nlohmann::json({4, 1, 1}));
  EXPECT_GT(kernel["registers_per_thread"].get<int>(), 0);
  EXPECT_GT(kernel["busy_us"].get<double>(), 0.0);

  ASSERT_TRUE(result.device_status_before.value("available", false))
      << result.device_status_before.dump();
  EXPECT_GT(result.device_status_before["sm_clock_mhz"].get<unsigned>(), 0u);
  EXPECT_GT(result.device_status_before["memory_clock_mhz"].get<unsigned>(), 0u);
  EXPECT_TRUE(result.device_status_after.value("available", false));
}

TEST_F(GpuWorker, RejectedShapeIsFailedWithTheKernelsMessage) {
  ASSERT_EQ(load_add_one().outcome, CallOutcome::Ok);
  ExecuteResult result = worker_->execute(add_one_request({10, 100}));
  EXPECT_EQ(result.outcome, CallOutcome::Failed);
  EXPECT_EQ(result.return_code, 1);
  EXPECT_NE(result.message.find("dimensions"), std::string::npos) << result.message;
}

TEST_F(GpuWorker, MissingPlanIsALoadFailureAndTheWorkerCarriesOn) {
  ExecuteResult missing = worker_->load("/nonexistent/kernel.launch.json", "ka_run");
  EXPECT_EQ(missing.outcome, CallOutcome::LoadFailed);
  EXPECT_NE(missing.message.find("/nonexistent"), std::string::npos) << missing.message;
  ExecuteResult loaded = load_add_one();
  ASSERT_EQ(loaded.outcome, CallOutcome::Ok) << loaded.message;
  EXPECT_EQ(worker_->execute(add_one_request()).outcome, CallOutcome::Ok);
}

}  // namespace
}  // namespace kernelarc
