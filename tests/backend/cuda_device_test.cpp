// The CUDA device on a real GPU: memory, fills, flushes and timed calls. Every test here skips
// itself where no CUDA device can be used.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <regex>

#include "backend/cuda/cuda_cubin_kernel.h"
#include "backend/cuda_test_support.h"
#include "backend/worker/shared_arena.h"

namespace kernelarc {
namespace {

using testing::TempDir;

/// A buffer on the device, released with it.
struct DeviceBuffer {
  Device& device;
  void* data;
  DeviceBuffer(Device& d, std::size_t bytes) : device(d), data(d.allocate(bytes)) {}
  ~DeviceBuffer() { device.release(data); }
};

ka_tensor tensor_of(void* data, DType dtype, std::initializer_list<int64_t> shape) {
  ka_tensor t{};
  t.data = data;
  t.dtype = static_cast<int>(dtype);
  t.ndim = static_cast<int>(shape.size());
  int d = 0;
  for (int64_t extent : shape) t.shape[d++] = extent;
  int64_t stride = 1;
  for (int i = t.ndim - 1; i >= 0; --i) {
    t.stride[i] = stride;
    stride *= t.shape[i];
  }
  return t;
}

class GpuCudaDevice : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (cuda_device_count() == 0) return;
    cache_ = new TempDir();
    CudaCompileOptions options;
    options.cache_dir = cache_->path();
    const CompileResult spin =
        compile_cuda_solution(testing::spin_solution(), testing::spin_definition(), options);
    ASSERT_TRUE(spin.ok) << spin.log;
    void* handle = dlopen(spin.library.c_str(), RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle, nullptr) << dlerror();
    on_stream_ = reinterpret_cast<ka_run_fn>(dlsym(handle, "ka_run"));
    on_side_stream_ = reinterpret_cast<ka_run_fn>(dlsym(handle, "ka_run_side_stream"));
  }

  static void TearDownTestSuite() {
    delete cache_;
    cache_ = nullptr;
  }

  void SetUp() override {
    KERNELARC_REQUIRE_GPU();
    device_ = make_cuda_device(0);
    info_ = cuda_device_info(*device_);
    ASSERT_NE(info_, nullptr);
  }

  /// Runs the spin candidate once, timed; `spun_ns` gets what the kernel itself measured.
  TimedCall timed_spin(ka_run_fn entry, int64_t& spun_ns) {
    DeviceBuffer elapsed(*device_, sizeof(int64_t));
    ka_tensor output = tensor_of(elapsed.data, DType::Int64, {1});
    TimedCall timed = device_->timed_call(
        [&] { return entry(nullptr, 0, &output, 1, device_->stream(), nullptr, 0); });
    device_->copy_to_host(&spun_ns, elapsed.data, sizeof(spun_ns));
    return timed;
  }

  static inline TempDir* cache_ = nullptr;
  static inline ka_run_fn on_stream_ = nullptr;
  static inline ka_run_fn on_side_stream_ = nullptr;
  std::unique_ptr<Device> device_;
  const CudaDeviceInfo* info_ = nullptr;
};

TEST_F(GpuCudaDevice, DescribesItself) {
  EXPECT_EQ(device_->kind(), "cuda:0");
  EXPECT_TRUE(std::regex_match(info_->arch(), std::regex("sm_[0-9]+"))) << info_->arch();
  EXPECT_FALSE(info_->pci_bus_id().empty());
  EXPECT_NE(device_->stream(), nullptr);
  std::printf("device: %s\n", device_->description().c_str());
}

TEST_F(GpuCudaDevice, CopiesAndFillsPatterns) {
  const std::size_t bytes = (std::size_t{3} << 20) + 6;  // several doublings and a partial tail
  DeviceBuffer buffer(*device_, bytes);
  const uint8_t pattern[] = {0x11, 0x22, 0x33, 0x44};
  device_->fill_pattern(buffer.data, bytes, pattern);
  std::vector<uint8_t> host(bytes);
  device_->copy_to_host(host.data(), buffer.data, bytes);
  for (std::size_t i = 0; i < bytes; ++i) {
    ASSERT_EQ(host[i], pattern[i % 4]) << "at byte " << i;
  }
  const uint8_t uniform[] = {0x7F, 0x7F};
  device_->fill_pattern(buffer.data, bytes, uniform);
  device_->copy_to_host(host.data(), buffer.data, bytes);
  EXPECT_TRUE(std::all_of(host.begin(), host.end(), [](uint8_t b) { return b == 0x7F; }));

  for (std::size_t i = 0; i < bytes; ++i) host[i] = static_cast<uint8_t>(i * 7);
  device_->copy_from_host(buffer.data, host.data(), bytes);
  std::vector<uint8_t> back(bytes);
  device_->copy_to_host(back.data(), buffer.data, bytes);
  EXPECT_EQ(back, host);
}

// The worker pins its shared arena: a file in /dev/shm mapped shared, as the worker maps it.
TEST_F(GpuCudaDevice, PinsASharedArenaAndCopiesThroughIt) {
  SharedArena parent;
  parent.reserve(std::size_t{8} << 20);
  ArenaMapping arena(std::filesystem::path("/proc/self/fd") / std::to_string(parent.fd()));
  std::span<std::byte> bytes = arena.bytes();
  ASSERT_GE(bytes.size(), std::size_t{8} << 20);
  ASSERT_TRUE(device_->register_host(bytes));
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<std::byte>(i * 13);
  DeviceBuffer buffer(*device_, bytes.size());
  device_->copy_from_host(buffer.data, bytes.data(), bytes.size());
  std::vector<std::byte> expected(bytes.begin(), bytes.end());
  std::fill(bytes.begin(), bytes.end(), std::byte{0});
  device_->copy_to_host(bytes.data(), buffer.data, bytes.size());
  EXPECT_TRUE(std::equal(bytes.begin(), bytes.end(), expected.begin()));
  device_->unregister_host(bytes.data());
  // Unregistered, the same memory still copies.
  device_->copy_to_host(bytes.data(), buffer.data, bytes.size());
  EXPECT_TRUE(std::equal(bytes.begin(), bytes.end(), expected.begin()));
}

TEST_F(GpuCudaDevice, TimesWorkOnItsStream) {
  ASSERT_NE(on_stream_, nullptr);
  int64_t spun_ns = 0;
  const TimedCall timed = timed_spin(on_stream_, spun_ns);
  EXPECT_EQ(timed.return_code, 0);
  ASSERT_EQ(timed.clock, "cupti") << device_->description();
  EXPECT_GE(spun_ns, 2'000'000);
  EXPECT_GE(timed.nanoseconds, 0.99 * static_cast<double>(spun_ns));
  ASSERT_EQ(timed.launched.size(), 1u);
  EXPECT_NE(timed.launched[0].find("spin_kernel"), std::string::npos) << timed.launched[0];
  EXPECT_NE(timed.launched[0].find("|1,1,1|32,1,1|0"), std::string::npos) << timed.launched[0];
  std::printf("on the stream: span %.0f ns, kernel measured %lld ns\n", timed.nanoseconds,
              static_cast<long long>(spun_ns));
}

TEST_F(GpuCudaDevice, CatchesWorkOnASideStream) {
  ASSERT_NE(on_side_stream_, nullptr);
  int64_t spun_ns = 0;
  const TimedCall timed = timed_spin(on_side_stream_, spun_ns);
  EXPECT_EQ(timed.return_code, 0);
  ASSERT_EQ(timed.clock, "cupti");
  EXPECT_GE(spun_ns, 2'000'000);
  EXPECT_GE(timed.nanoseconds, 0.99 * static_cast<double>(spun_ns));
  ASSERT_EQ(timed.launched.size(), 1u);
  EXPECT_NE(timed.launched[0].find("spin_kernel"), std::string::npos);
  std::printf("on a side stream: span %.0f ns, kernel measured %lld ns\n", timed.nanoseconds,
              static_cast<long long>(spun_ns));
}

TEST_F(GpuCudaDevice, LaunchedListIsStableAndExcludesTheWorkersOwnWork) {
  std::vector<std::string> first;
  double last_span_ns = 0;
  for (int run = 0; run < 3; ++run) {
    // A flush and a fill right before the call: neither may show up in the call's list.
    device_->flush_cache();
    int64_t spun_ns = 0;
    const TimedCall timed = timed_spin(on_stream_, spun_ns);
    if (run == 0) first = timed.launched;
    EXPECT_EQ(timed.launched, first) << "run " << run;
    last_span_ns = timed.nanoseconds;
  }
  ASSERT_EQ(first.size(), 1u);
  const std::vector<KernelResources> kernels = info_->last_kernel_resources();
  ASSERT_EQ(kernels.size(), 1u);
  EXPECT_NE(kernels[0].name.find("spin_kernel"), std::string::npos);
  EXPECT_EQ(kernels[0].block, (std::array<int, 3>{32, 1, 1}));
  EXPECT_GT(kernels[0].registers_per_thread, 0);
  EXPECT_EQ(kernels[0].launches, 1);
  // The one kernel is the whole span: its busy time is that span, start to end.
  EXPECT_GT(kernels[0].busy_us, 0.0);
  EXPECT_NEAR(kernels[0].busy_us, last_span_ns * 1e-3, 1e-6);
  std::printf("resources: %s\n", kernels[0].to_json().dump().c_str());
}

TEST_F(GpuCudaDevice, RunsAnNvrtcKernelThroughItsLaunchPlan) {
  TempDir cache;
  CudaCompileOptions options;
  options.cache_dir = cache.path();
  options.device_arch = info_->arch();
  const Problem problem = testing::add_one_problem();
  const CompileResult compiled =
      compile_cuda_solution(testing::add_one_solution(), problem.definition, options);
  ASSERT_TRUE(compiled.ok) << compiled.log;
  std::string error;
  std::unique_ptr<CubinKernel> kernel = load_cubin_kernel(compiled.library, error);
  ASSERT_NE(kernel, nullptr) << error;

  constexpr int64_t n = 1000;  // not a multiple of the block: the kernel's bound check matters
  std::vector<float> x(n);
  for (int64_t i = 0; i < n; ++i) x[i] = 0.5f * static_cast<float>(i);
  DeviceBuffer x_device(*device_, n * sizeof(float));
  DeviceBuffer y_device(*device_, n * sizeof(float));
  device_->copy_from_host(x_device.data, x.data(), n * sizeof(float));
  ka_tensor input = tensor_of(x_device.data, DType::Float32, {n});
  ka_tensor output = tensor_of(y_device.data, DType::Float32, {n});
  const TimedCall timed = device_->timed_call(
      [&] { return kernel->run(&input, 1, &output, 1, device_->stream(), nullptr, 0); });
  ASSERT_EQ(timed.return_code, 0) << kernel->last_error();
  std::vector<float> y(n);
  device_->copy_to_host(y.data(), y_device.data, n * sizeof(float));
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(y[i], x[i] + 1.0f) << "at " << i;
  ASSERT_EQ(timed.launched, std::vector<std::string>{"add_one|4,1,1|256,1,1|0"});

  // A launch the GPU refuses is the candidate's failure, reported through last_error.
  ka_tensor wrong_rank = tensor_of(y_device.data, DType::Float32, {10, 100});
  EXPECT_EQ(kernel->run(&input, 1, &wrong_rank, 1, device_->stream(), nullptr, 0), 1);
  EXPECT_NE(std::string(kernel->last_error()).find("dimensions"), std::string::npos);
}

TEST_F(GpuCudaDevice, RefusedLaunchIsAFailureNotACrash) {
  TempDir cache;
  CudaCompileOptions options;
  options.cache_dir = cache.path();
  options.device_arch = info_->arch();
  Solution solution = testing::add_one_solution();
  solution.ext["knobs"]["BLOCK"] = 4096;  // above the 1024 threads a block may have
  const CompileResult compiled =
      compile_cuda_solution(solution, testing::add_one_problem().definition, options);
  ASSERT_TRUE(compiled.ok) << compiled.log;
  std::string error;
  std::unique_ptr<CubinKernel> kernel = load_cubin_kernel(compiled.library, error);
  ASSERT_NE(kernel, nullptr) << error;
  DeviceBuffer buffer(*device_, 4096 * sizeof(float));
  ka_tensor x = tensor_of(buffer.data, DType::Float32, {4096});
  ka_tensor y = tensor_of(buffer.data, DType::Float32, {4096});
  EXPECT_EQ(kernel->run(&x, 1, &y, 1, device_->stream(), nullptr, 0), 1);
  EXPECT_NE(std::string(kernel->last_error()).find("launching"), std::string::npos)
      << kernel->last_error();
  device_->synchronize();  // the context is still usable
}

}  // namespace
}  // namespace kernelarc
