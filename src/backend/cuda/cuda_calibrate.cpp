// GPU calibration: memory bandwidth (the best of several methods), fp32 FMA peak and cuBLASLt
// matrix-product peaks of one GPU.
//
// Only the static CUDA runtime is linked. The measuring kernels are compiled with NVRTC and
// launched through the runtime's library API, so nothing links libcuda; cuBLASLt, like NVRTC and
// NVML (cuda_dynlib.h), is opened with dlopen when a calibration runs.
#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <type_traits>
#include <vector>

#include <cublasLt.h>
#include <cuda_runtime.h>
#include <fmt/format.h>

#include "backend/calibrate.h"
#include "backend/cuda/cuda_dynlib.h"
#include "backend/cuda/cuda_nvml.h"
#include "backend/cuda/cuda_nvrtc.h"
#include "core/error.h"

namespace kernelarc {
namespace {

constexpr int kGemmSize = 8192;     // large enough that every algorithm reaches steady state
constexpr int kCandidateAlgos = 4;  // cuBLASLt's top heuristic choices that get timed
constexpr std::size_t kGemmWorkspace = std::size_t{32} << 20;

// Random values in [-1, 1) (fp8: magnitudes 1/8 to 3.75, never NaN) from a hash of the index:
// products of zeros or constants draw less power and would overstate the sustained peak.
constexpr const char* kKernels = R"(
__device__ unsigned int ka_hash(unsigned long long i, unsigned int seed) {
  unsigned int x = (unsigned int)i * 2654435761u ^ (unsigned int)(i >> 32) ^ seed;
  x ^= x >> 16; x *= 0x7feb352du; x ^= x >> 15; x *= 0x846ca68bu; x ^= x >> 16;
  return x;
}
extern "C" __global__ void ka_fill(void* data, unsigned long long count, int kind,
                                   unsigned int seed) {
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
       i < count; i += (unsigned long long)gridDim.x * blockDim.x) {
    unsigned int x = ka_hash(i, seed);
    float v = (float)(x >> 8) * (2.0f / 16777216.0f) - 1.0f;
    if (kind == 0) {
      ((float*)data)[i] = v;
    } else if (kind == 1) {
      ((unsigned short*)data)[i] = (unsigned short)(__float_as_uint(v) >> 16);
    } else if (kind == 2) {
      unsigned short h;
      asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(v));
      ((unsigned short*)data)[i] = h;
    } else {
      ((unsigned char*)data)[i] =
          (unsigned char)((x & 0x80u) | ((4u + (x >> 8) % 5u) << 3) | (x & 7u));
    }
  }
}
// Bandwidth kernels: copies at 4-, 8- and 16-byte vectors (grid-stride, and one element per
// thread), a read-only reduction and a write-only fill. Whichever streams fastest sets the bound.
template <typename T>
__device__ void ka_copy_grid(const T* __restrict__ src, T* __restrict__ dst,
                             unsigned long long count) {
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
       i < count; i += (unsigned long long)gridDim.x * blockDim.x) {
    dst[i] = src[i];
  }
}
extern "C" __global__ void ka_copy4(const unsigned int* __restrict__ src,
                                    unsigned int* __restrict__ dst, unsigned long long count) {
  ka_copy_grid(src, dst, count);
}
extern "C" __global__ void ka_copy8(const uint2* __restrict__ src, uint2* __restrict__ dst,
                                    unsigned long long count) {
  ka_copy_grid(src, dst, count);
}
extern "C" __global__ void ka_copy16(const uint4* __restrict__ src, uint4* __restrict__ dst,
                                     unsigned long long count) {
  ka_copy_grid(src, dst, count);
}
extern "C" __global__ void ka_copy16_flat(const uint4* __restrict__ src, uint4* __restrict__ dst,
                                          unsigned long long count) {
  unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
  if (i < count) dst[i] = src[i];
}
extern "C" __global__ void ka_read16(const uint4* __restrict__ src, unsigned int* out,
                                     unsigned long long count) {
  unsigned int sum = 0;
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
       i < count; i += (unsigned long long)gridDim.x * blockDim.x) {
    uint4 v = src[i];
    sum ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (sum == 0x9e3779b9u) out[0] = sum;  // rarely true; keeps the loads alive
}
extern "C" __global__ void ka_write16(uint4* __restrict__ dst, unsigned long long count) {
  uint4 value;
  value.x = 1u;
  value.y = 2u;
  value.z = 3u;
  value.w = 4u;
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
       i < count; i += (unsigned long long)gridDim.x * blockDim.x) {
    dst[i] = value;
  }
}
extern "C" __global__ void ka_fma(float* out, int iterations, float mul, float add) {
  float a[8];
#pragma unroll
  for (int k = 0; k < 8; ++k) a[k] = threadIdx.x + k;
  for (int i = 0; i < iterations; ++i) {
#pragma unroll
    for (int k = 0; k < 8; ++k) a[k] = fmaf(a[k], mul, add);
  }
  float sum = 0;
#pragma unroll
  for (int k = 0; k < 8; ++k) sum += a[k];
  if (sum == -1.0f) out[0] = sum;  // never true; keeps the chains alive
}
)";

class Failure {
 public:
  explicit Failure(int ordinal) : label_(fmt::format("calibrate cuda:{}", ordinal)) {}
  [[noreturn]] void raise(const std::string& what) const {
    throw InternalError(fmt::format("{}: {}", label_, what));
  }
  void check(cudaError_t error, const char* call) const {
    if (error != cudaSuccess) raise(fmt::format("{}: {}", call, cudaGetErrorString(error)));
  }

 private:
  std::string label_;
};

/// Owns a device allocation.
class DeviceBuffer {
 public:
  DeviceBuffer(std::size_t bytes, const Failure& fail) {
    fail.check(cudaMalloc(&pointer_, bytes), "cudaMalloc");
  }
  ~DeviceBuffer() { cudaFree(pointer_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* get() const { return pointer_; }

 private:
  void* pointer_ = nullptr;
};

/// A stream and two events; times work enqueued on the stream.
class Timer {
 public:
  explicit Timer(const Failure& fail) : fail_(fail) {
    fail.check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    fail.check(cudaEventCreate(&start_), "cudaEventCreate");
    fail.check(cudaEventCreate(&stop_), "cudaEventCreate");
  }
  ~Timer() {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
    cudaStreamDestroy(stream_);
  }
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;
  cudaStream_t stream() const { return stream_; }

  /// Median milliseconds of `repetitions` timed calls of `work` after `warmup` untimed ones.
  double median_ms(int warmup, int repetitions, const std::function<void()>& work) {
    for (int i = 0; i < warmup; ++i) work();
    std::vector<double> times;
    for (int i = 0; i < repetitions; ++i) {
      fail_.check(cudaEventRecord(start_, stream_), "cudaEventRecord");
      work();
      fail_.check(cudaEventRecord(stop_, stream_), "cudaEventRecord");
      fail_.check(cudaEventSynchronize(stop_), "cudaEventSynchronize");
      float ms = 0;
      fail_.check(cudaEventElapsedTime(&ms, start_, stop_), "cudaEventElapsedTime");
      times.push_back(ms);
    }
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
  }

 private:
  const Failure& fail_;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
};

/// The measuring kernels, compiled by NVRTC for this GPU and loaded through the runtime.
class Kernels {
 public:
  Kernels(const cudaDeviceProp& props, const Failure& fail) : fail_(fail) {
    NvrtcRequest request;
    request.source_name = "calibrate.cu";
    request.source = kKernels;
    request.options = {fmt::format("--gpu-architecture=sm_{}{}", props.major, props.minor),
                       "-std=c++17"};
    request.kernel = "ka_fill";
    const NvrtcResult compiled = nvrtc_compile(request);
    if (!compiled.ok) {
      fail.raise(fmt::format("the measuring kernels did not compile ({}): {}", request.options[0],
                             compiled.log));
    }
    fail.check(cudaLibraryLoadData(&library_, compiled.cubin.data(), nullptr, nullptr, 0, nullptr,
                                   nullptr, 0),
               "cudaLibraryLoadData");
    fail.check(cudaLibraryGetKernel(&fill, library_, "ka_fill"), "cudaLibraryGetKernel(ka_fill)");
    for (const char* name :
         {"ka_copy4", "ka_copy8", "ka_copy16", "ka_copy16_flat", "ka_read16", "ka_write16"}) {
      cudaKernel_t kernel = nullptr;
      fail.check(cudaLibraryGetKernel(&kernel, library_, name),
                 fmt::format("cudaLibraryGetKernel({})", name).c_str());
      bandwidth[name] = kernel;
    }
    fail.check(cudaLibraryGetKernel(&fma, library_, "ka_fma"), "cudaLibraryGetKernel(ka_fma)");
  }
  ~Kernels() { cudaLibraryUnload(library_); }
  Kernels(const Kernels&) = delete;
  Kernels& operator=(const Kernels&) = delete;

  void launch(cudaKernel_t kernel, unsigned blocks, unsigned threads, void** args,
              cudaStream_t stream) const {
    fail_.check(cudaLaunchKernel(reinterpret_cast<const void*>(kernel), dim3(blocks), dim3(threads),
                                 args, 0, stream),
                "cudaLaunchKernel");
  }

  cudaKernel_t fill = nullptr;
  std::map<std::string, cudaKernel_t> bandwidth;  ///< by kernel name
  cudaKernel_t fma = nullptr;

 private:
  const Failure& fail_;
  cudaLibrary_t library_ = nullptr;
};

#ifdef KERNELARC_CUBLASLT_LIBRARY
constexpr const char* kCublasLtAtBuild = KERNELARC_CUBLASLT_LIBRARY;
#else
constexpr const char* kCublasLtAtBuild = "";
#endif

/// cuBLASLt's entry points, opened at run time.
struct CublasLt {
#define KA_LT_FN(name) decltype(&::name) name = nullptr;
  KA_LT_FN(cublasLtCreate)
  KA_LT_FN(cublasLtDestroy)
  KA_LT_FN(cublasLtGetVersion)
  KA_LT_FN(cublasLtGetStatusString)
  KA_LT_FN(cublasLtMatmulDescCreate)
  KA_LT_FN(cublasLtMatmulDescDestroy)
  KA_LT_FN(cublasLtMatmulDescSetAttribute)
  KA_LT_FN(cublasLtMatrixLayoutCreate)
  KA_LT_FN(cublasLtMatrixLayoutDestroy)
  KA_LT_FN(cublasLtMatmulPreferenceCreate)
  KA_LT_FN(cublasLtMatmulPreferenceDestroy)
  KA_LT_FN(cublasLtMatmulPreferenceSetAttribute)
  KA_LT_FN(cublasLtMatmulAlgoGetHeuristic)
  KA_LT_FN(cublasLtMatmul)
#undef KA_LT_FN

  explicit CublasLt(const Failure& fail) {
    const DynamicLibrary library = DynamicLibrary::open(toolkit_library_candidates(
        kCublasLtAtBuild, {"libcublasLt.so", "libcublasLt.so.13", "libcublasLt.so.12"}));
    if (!library.loaded()) fail.raise("cannot load cuBLASLt: " + library.error());
    auto bind = [&](auto& function, const char* name) {
      function = library.function<std::remove_reference_t<decltype(function)>>(name);
      if (function == nullptr) fail.raise(fmt::format("{} lacks {}", library.name(), name));
    };
#define KA_LT_BIND(name) bind(name, #name);
    KA_LT_BIND(cublasLtCreate)
    KA_LT_BIND(cublasLtDestroy)
    KA_LT_BIND(cublasLtGetVersion)
    KA_LT_BIND(cublasLtGetStatusString)
    KA_LT_BIND(cublasLtMatmulDescCreate)
    KA_LT_BIND(cublasLtMatmulDescDestroy)
    KA_LT_BIND(cublasLtMatmulDescSetAttribute)
    KA_LT_BIND(cublasLtMatrixLayoutCreate)
    KA_LT_BIND(cublasLtMatrixLayoutDestroy)
    KA_LT_BIND(cublasLtMatmulPreferenceCreate)
    KA_LT_BIND(cublasLtMatmulPreferenceDestroy)
    KA_LT_BIND(cublasLtMatmulPreferenceSetAttribute)
    KA_LT_BIND(cublasLtMatmulAlgoGetHeuristic)
    KA_LT_BIND(cublasLtMatmul)
#undef KA_LT_BIND
  }
};

/// One matrix-product configuration: inputs of `ab`, output of `cd`, fp32 scaling.
struct GemmCase {
  const char* dtype;  ///< the calibration's key
  cudaDataType ab;
  cudaDataType cd;
  cublasComputeType_t compute;
  int fill_kind;  ///< ka_fill's kind for the inputs
  bool fast_accumulate;
};

constexpr GemmCase kGemmCases[] = {
    {"bfloat16", CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 1, false},
    {"float16", CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, 2, false},
    {"float8_e4m3fn", CUDA_R_8F_E4M3, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 3, true},
    {"tfloat32", CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, 0, false},
};

/// The best TFLOP/s of `n`^3 products D = A^T B (the TN layout fp8 requires) over cuBLASLt's
/// top heuristic algorithms, each the median of several timed runs.
double gemm_tflops(const CublasLt& lt, cublasLtHandle_t handle, const GemmCase& gemm, void* a,
                   void* b, void* d, void* workspace, Timer& timer, const Failure& fail) {
  auto check = [&](cublasStatus_t status, const char* call) {
    if (status != CUBLAS_STATUS_SUCCESS) {
      fail.raise(fmt::format("{} ({}): {}", call, gemm.dtype, lt.cublasLtGetStatusString(status)));
    }
  };
  const int64_t n = kGemmSize;
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, ld = nullptr;
  cublasLtMatmulPreference_t preference = nullptr;
  struct Cleanup {
    const CublasLt& lt;
    cublasLtMatmulDesc_t& op;
    cublasLtMatrixLayout_t &la, &lb, &ld;
    cublasLtMatmulPreference_t& preference;
    ~Cleanup() {
      if (preference) lt.cublasLtMatmulPreferenceDestroy(preference);
      for (auto layout : {la, lb, ld}) {
        if (layout) lt.cublasLtMatrixLayoutDestroy(layout);
      }
      if (op) lt.cublasLtMatmulDescDestroy(op);
    }
  } cleanup{lt, op, la, lb, ld, preference};

  check(lt.cublasLtMatmulDescCreate(&op, gemm.compute, CUDA_R_32F), "cublasLtMatmulDescCreate");
  const cublasOperation_t transpose = CUBLAS_OP_T;
  check(lt.cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &transpose,
                                          sizeof(transpose)),
        "cublasLtMatmulDescSetAttribute");
  if (gemm.fast_accumulate) {
    const int8_t fast = 1;
    check(
        lt.cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast, sizeof(fast)),
        "cublasLtMatmulDescSetAttribute");
  }
  check(lt.cublasLtMatrixLayoutCreate(&la, gemm.ab, n, n, n), "cublasLtMatrixLayoutCreate");
  check(lt.cublasLtMatrixLayoutCreate(&lb, gemm.ab, n, n, n), "cublasLtMatrixLayoutCreate");
  check(lt.cublasLtMatrixLayoutCreate(&ld, gemm.cd, n, n, n), "cublasLtMatrixLayoutCreate");
  check(lt.cublasLtMatmulPreferenceCreate(&preference), "cublasLtMatmulPreferenceCreate");
  check(
      lt.cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                              &kGemmWorkspace, sizeof(kGemmWorkspace)),
      "cublasLtMatmulPreferenceSetAttribute");
  cublasLtMatmulHeuristicResult_t results[kCandidateAlgos] = {};
  int found = 0;
  check(lt.cublasLtMatmulAlgoGetHeuristic(handle, op, la, lb, ld, ld, preference, kCandidateAlgos,
                                          results, &found),
        "cublasLtMatmulAlgoGetHeuristic");
  if (found == 0) fail.raise(fmt::format("cuBLASLt offers no algorithm for {}", gemm.dtype));

  const float alpha = 1.0f, beta = 0.0f;
  double best_ms = 0;
  for (int i = 0; i < found; ++i) {
    if (results[i].state != CUBLAS_STATUS_SUCCESS) continue;
    const double ms = timer.median_ms(3, 10, [&] {
      check(lt.cublasLtMatmul(handle, op, &alpha, a, la, b, lb, &beta, d, ld, d, ld,
                              &results[i].algo, workspace, kGemmWorkspace, timer.stream()),
            "cublasLtMatmul");
    });
    if (best_ms == 0 || ms < best_ms) best_ms = ms;
  }
  if (best_ms == 0) fail.raise(fmt::format("no cuBLASLt algorithm ran for {}", gemm.dtype));
  return 2.0 * static_cast<double>(n * n * n) / (best_ms * 1e-3) / 1e12;
}

/// The best of several ways to stream 1 GiB buffers (far beyond any L2), as bytes moved (read +
/// written) per second in GB/s: cudaMemcpy D2D, copy kernels at 4-, 8- and 16-byte vectors
/// (grid-stride at two grid sizes, and one element per thread), a read-only reduction and a
/// write-only fill. H200: cudaMemcpy alone was beaten by a real softmax (SOL score 1.012), so one
/// method is not a bound. env["bandwidth_method"] names the winner; every method's rate is kept.
double measure_bandwidth_gbs(const Kernels& kernels, Timer& timer, unsigned sms,
                             std::map<std::string, std::string>& env, const Failure& fail) {
  const std::size_t bytes = std::size_t{1} << 30;
  DeviceBuffer src(bytes, fail), dst(bytes, fail), sink(sizeof(unsigned int), fail);
  const cudaStream_t stream = timer.stream();
  fail.check(cudaMemsetAsync(src.get(), 1, bytes, stream), "cudaMemsetAsync");
  double best_gbs = 0;
  auto record = [&](const std::string& method, double moved_bytes, double ms) {
    const double gbs = moved_bytes / (ms * 1e-3) / 1e9;
    env["bandwidth: " + method] = fmt::format("{:.0f} GB/s", gbs);
    if (gbs > best_gbs) {
      best_gbs = gbs;
      env["bandwidth_method"] = method;
    }
  };
  const double both = 2.0 * static_cast<double>(bytes);
  record("cudaMemcpy D2D", both, timer.median_ms(3, 20, [&] {
    fail.check(cudaMemcpyAsync(dst.get(), src.get(), bytes, cudaMemcpyDeviceToDevice, stream),
               "cudaMemcpyAsync");
  }));
  void* source = src.get();
  void* destination = dst.get();
  void* out = sink.get();
  unsigned long long words = bytes / 4, pairs = bytes / 8, vectors = bytes / 16;
  auto time_kernel = [&](const char* name, unsigned blocks, std::vector<void*> args) {
    return timer.median_ms(3, 20, [&] {
      kernels.launch(kernels.bandwidth.at(name), blocks, 256, args.data(), stream);
    });
  };
  for (const unsigned waves : {8u, 32u}) {
    const unsigned blocks = sms * waves;
    const std::string grid = fmt::format("grid-stride, {} blocks of 256", blocks);
    record("copy kernel, 4-byte elements, " + grid, both,
           time_kernel("ka_copy4", blocks, {&source, &destination, &words}));
    record("copy kernel, 8-byte vectors, " + grid, both,
           time_kernel("ka_copy8", blocks, {&source, &destination, &pairs}));
    record("copy kernel, 16-byte vectors, " + grid, both,
           time_kernel("ka_copy16", blocks, {&source, &destination, &vectors}));
    record("read-only reduction, 16-byte vectors, " + grid, static_cast<double>(bytes),
           time_kernel("ka_read16", blocks, {&source, &out, &vectors}));
    record("write-only fill, 16-byte vectors, " + grid, static_cast<double>(bytes),
           time_kernel("ka_write16", blocks, {&destination, &vectors}));
  }
  record("copy kernel, 16-byte vectors, one per thread", both,
         time_kernel("ka_copy16_flat", static_cast<unsigned>((vectors + 255) / 256),
                     {&source, &destination, &vectors}));
  return best_gbs;
}

/// fp32 FMA peak: 8 independent chains per thread, 2048 threads per SM.
double measure_fma_tflops(const Kernels& kernels, Timer& timer, unsigned sms, const Failure& fail) {
  DeviceBuffer sink(sizeof(float), fail);
  void* out = sink.get();
  int iterations = 1 << 16;
  float mul = 0.999999f, add = 1e-6f;
  void* args[] = {&out, &iterations, &mul, &add};
  const double ms = timer.median_ms(
      2, 7, [&] { kernels.launch(kernels.fma, sms * 8, 256, args, timer.stream()); });
  const double flops = 2.0 * 8 * iterations * static_cast<double>(sms) * 8 * 256;
  return flops / (ms * 1e-3) / 1e12;
}

std::string version_text(int version) {  // CUDA's 1000 * major + 10 * minor
  return fmt::format("{}.{}", version / 1000, version % 1000 / 10);
}

}  // namespace

Calibration calibrate_cuda(int ordinal) {
  const Failure fail(ordinal);
  int count = 0;
  const cudaError_t counted = cudaGetDeviceCount(&count);
  if (counted != cudaSuccess || count == 0) {
    fail.raise(fmt::format("no CUDA device available (cudaGetDeviceCount: {})",
                           counted == cudaSuccess ? "0 devices" : cudaGetErrorString(counted)));
  }
  if (ordinal < 0 || ordinal >= count) {
    fail.raise(fmt::format("no such device: {} CUDA device(s) present", count));
  }
  fail.check(cudaSetDevice(ordinal), "cudaSetDevice");
  cudaDeviceProp props{};
  fail.check(cudaGetDeviceProperties(&props, ordinal), "cudaGetDeviceProperties");

  Calibration result;
  result.device = fmt::format("cuda:{}", ordinal);
  result.description = props.name;
  result.measured_at = utc_timestamp();
  result.l2_bytes = props.l2CacheSize;
  result.llc_bytes = props.l2CacheSize;
  result.sm_count = props.multiProcessorCount;
  auto& env = result.environment;
  env["compute_capability"] = fmt::format("{}.{}", props.major, props.minor);
  env["memory_bytes"] = std::to_string(props.totalGlobalMem);
  int version = 0;
  if (cudaDriverGetVersion(&version) == cudaSuccess) env["cuda_driver_api"] = version_text(version);
  if (cudaRuntimeGetVersion(&version) == cudaSuccess) env["cuda_runtime"] = version_text(version);
  env["compiler"] = nvrtc_version();
  int khz = 0;
  if (cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, ordinal) == cudaSuccess) {
    env["sm_clock_max_mhz"] = std::to_string(khz / 1000);
  }
  if (cudaDeviceGetAttribute(&khz, cudaDevAttrMemoryClockRate, ordinal) == cudaSuccess) {
    env["memory_clock_max_mhz"] = std::to_string(khz / 1000);
  }
  char bus_id[32] = {};
  fail.check(cudaDeviceGetPCIBusId(bus_id, sizeof(bus_id), ordinal), "cudaDeviceGetPCIBusId");
  const GpuStatus idle = read_gpu_status_by_pci(bus_id);
  if (idle.available) {
    env["driver"] = idle.driver_version;
  } else {
    env["nvml"] = "unavailable: " + idle.unavailable_reason;
  }

  const Kernels kernels(props, fail);
  Timer timer(fail);
  const unsigned sms = static_cast<unsigned>(props.multiProcessorCount);
  result.copy_bandwidth_gbs = measure_bandwidth_gbs(kernels, timer, sms, env, fail);
  result.fp32_fma_tflops = measure_fma_tflops(kernels, timer, sms, fail);
  const CublasLt lt(fail);
  env["cublaslt"] = std::to_string(lt.cublasLtGetVersion());
  cublasLtHandle_t handle = nullptr;
  if (lt.cublasLtCreate(&handle) != CUBLAS_STATUS_SUCCESS) fail.raise("cublasLtCreate failed");
  struct HandleGuard {
    const CublasLt& lt;
    cublasLtHandle_t handle;
    ~HandleGuard() { lt.cublasLtDestroy(handle); }
  } guard{lt, handle};
  const std::size_t elements = std::size_t{kGemmSize} * kGemmSize;
  DeviceBuffer a(elements * 4, fail), b(elements * 4, fail), d(elements * 4, fail);
  DeviceBuffer workspace(kGemmWorkspace, fail);
  for (const GemmCase& gemm : kGemmCases) {
    unsigned long long count = elements;
    int kind = gemm.fill_kind;
    for (auto [buffer, seed] : {std::pair{a.get(), 1u}, std::pair{b.get(), 2u}}) {
      void* data = buffer;
      unsigned int fill_seed = seed;
      void* args[] = {&data, &count, &kind, &fill_seed};
      kernels.launch(kernels.fill, sms * 16, 256, args, timer.stream());
    }
    result.tensor_tflops[gemm.dtype] =
        gemm_tflops(lt, handle, gemm, a.get(), b.get(), d.get(), workspace.get(), timer, fail);
    if (std::strcmp(gemm.dtype, "bfloat16") == 0 && idle.available) {
      // Read right after the products, while the clocks are still where the load put them.
      const GpuStatus loaded = read_gpu_status_by_pci(bus_id);
      env["sm_clock_mhz_after_gemm"] = std::to_string(loaded.sm_clock_mhz);
      env["memory_clock_mhz_after_gemm"] = std::to_string(loaded.memory_clock_mhz);
      env["power_watts_after_gemm"] = fmt::format("{:.0f}", loaded.power_watts);
    }
  }
  env["gemm_shape"] = fmt::format("{0}x{0}x{0} TN", kGemmSize);
  fail.check(cudaStreamSynchronize(timer.stream()), "cudaStreamSynchronize");
  return result;
}

}  // namespace kernelarc
