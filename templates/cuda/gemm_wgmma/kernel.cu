// Hopper GEMM template (sm_90a): TMA loads, a warp-specialised wgmma pipeline and the gemm
// family's fused epilogue (gemm_kernel.cuh). This file is the host side: it checks the problem,
// builds the TMA tensor maps for this call's pointers, picks split-K for small M (partials in
// the workspace) and launches the persistent kernel.
//
// cuTensorMapEncodeTiled is a driver function; it is fetched through the runtime's entry-point
// query so that the shared object does not link libcuda.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <type_traits>

#include "gemm_kernel.cuh"
#include "ka_problem.h"
#include "kernelarc/abi.h"

namespace {

char g_error[512];

int fail(const char* format, ...) {
  va_list args;
  va_start(args, format);
  std::vsnprintf(g_error, sizeof g_error, format, args);
  va_end(args);
  return 1;
}

constexpr int kMaxDevices = 64;

struct DeviceState {
  bool ready = false;
  int multiprocessors = 0;
};
DeviceState g_devices[kMaxDevices];

PFN_cuTensorMapEncodeTiled_v12000 g_encode = nullptr;

int load_encoder() {
  if (g_encode != nullptr) return 0;
  void* function = nullptr;
  cudaDriverEntryPointQueryResult query = cudaDriverEntryPointSymbolNotFound;
  const cudaError_t status = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &function,
                                                              12000, cudaEnableDefault, &query);
  if (status != cudaSuccess || query != cudaDriverEntryPointSuccess || function == nullptr)
    return fail("cannot get cuTensorMapEncodeTiled from the driver: %s",
                cudaGetErrorString(status));
  g_encode = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(function);
  return 0;
}

/// The tensor map of one K-major operand ([rows, k], row stride k) with boxes of
/// box_rows x 64 elements, 128-byte swizzled. The last map per operand is kept: pointers change
/// between calls (the guard moves inputs), but repeated calls on the same buffers skip encoding.
struct MapCache {
  const void* pointer = nullptr;
  long long rows = -1, k = -1;
  CUtensorMap map;
};
MapCache g_map_a, g_map_b;

int tensor_map(MapCache& cache, const void* pointer, long long rows, long long k, int box_rows,
               const char* operand) {
  if (cache.pointer == pointer && cache.rows == rows && cache.k == k) return 0;
  cache.pointer = nullptr;
  if (k == 0) {  // no K step runs, so the map is never read
    std::memset(&cache.map, 0, sizeof cache.map);
  } else {
    const CUtensorMapDataType type =
        ka_gemm::kF16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
    const cuuint64_t dims[2] = {static_cast<cuuint64_t>(k), static_cast<cuuint64_t>(rows)};
    const cuuint64_t strides[1] = {static_cast<cuuint64_t>(k) * 2};
    const cuuint32_t box[2] = {ka_gemm::kBlockK, static_cast<cuuint32_t>(box_rows)};
    const cuuint32_t element_strides[2] = {1, 1};
    const CUresult result =
        g_encode(&cache.map, type, 2, const_cast<void*>(pointer), dims, strides, box,
                 element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                 CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (result != CUDA_SUCCESS)
      return fail("%s: cuTensorMapEncodeTiled failed (CUresult %d) for [%lld, %lld]", operand,
                  static_cast<int>(result), rows, k);
  }
  cache.pointer = pointer;
  cache.rows = rows;
  cache.k = k;
  return 0;
}

int prepare_device(int& multiprocessors) {
  int device = 0;
  cudaError_t status = cudaGetDevice(&device);
  if (status != cudaSuccess) return fail("cudaGetDevice: %s", cudaGetErrorString(status));
  if (device >= kMaxDevices) return fail("device %d: at most %d devices", device, kMaxDevices);
  DeviceState& state = g_devices[device];
  if (!state.ready) {
    status = cudaDeviceGetAttribute(&state.multiprocessors, cudaDevAttrMultiProcessorCount, device);
    if (status == cudaSuccess)
      status =
          cudaFuncSetAttribute(ka_gemm::gemm_wgmma_kernel,
                               cudaFuncAttributeMaxDynamicSharedMemorySize, ka_gemm::kSharedBytes);
    if (status != cudaSuccess)
      return fail("preparing the kernel on device %d: %s", device, cudaGetErrorString(status));
    state.ready = true;
  }
  multiprocessors = state.multiprocessors;
  return 0;
}

bool aligned16(const void* pointer) {
  return reinterpret_cast<uintptr_t>(pointer) % 16 == 0;
}

/// Fewest k-steps a split-K range gets, so that the stage ring still has work to overlap.
constexpr int kMinSplitSteps = 4;
/// The float32 partials may add at most 1/kPartialShare of the operands' bytes in traffic: on
/// the H200, M = 127 ran 25 us with 8 splits and 20 us with 4 (N = K = 4096, 128 x 256 tiles).
constexpr size_t kPartialShare = 4;

struct SplitPlan {
  int splits = 1;
  int steps = 0;  // k-steps per split
};

/// Splits K when the output tiles alone would leave more than half of the multiprocessors idle
/// (small M), as far as the workspace and the partials' traffic allow.
SplitPlan plan_splits(long long tiles, const KaArgs& ka, int multiprocessors, void* workspace,
                      size_t workspace_bytes) {
  const int k_steps = static_cast<int>((ka.k + ka_gemm::kBlockK - 1) / ka_gemm::kBlockK);
  const SplitPlan none{1, k_steps};
  if (tiles * 2 > multiprocessors || k_steps < 2 * kMinSplitSteps) return none;
  if (workspace == nullptr || reinterpret_cast<uintptr_t>(workspace) % 16 != 0) return none;
  const size_t slice_bytes = static_cast<size_t>(ka.m) * ka.n * sizeof(float);
  const size_t operand_bytes = static_cast<size_t>(ka.m + ka.n) * ka.k * 2;
  long long wanted = multiprocessors / tiles;
  wanted = std::min<long long>(wanted, k_steps / kMinSplitSteps);
  wanted = std::min<long long>(wanted, workspace_bytes / slice_bytes);
  wanted = std::min<long long>(wanted, operand_bytes / kPartialShare / slice_bytes);
  if (wanted < 2) return none;
  const int steps = static_cast<int>((k_steps + wanted - 1) / wanted);
  return {(k_steps + steps - 1) / steps, steps};  // every split gets a non-empty range
}

}  // namespace

extern "C" const char* ka_last_error(void) {
  return g_error;
}

extern "C" int ka_run(const ka_tensor* inputs, int n_inputs, ka_tensor* outputs, int n_outputs,
                      void* stream, void* workspace, size_t workspace_bytes) {
  KaArgs ka;
  if (const char* message = ka_bind(inputs, n_inputs, outputs, n_outputs, &ka))
    return fail("%s", message);
  // TMA needs every row start 16-byte aligned: the base pointers and the row pitch K * 2 bytes.
  if (ka.k % 8 != 0)
    return fail("gemm_wgmma: K = %lld; the TMA loads need K %% 8 == 0 (16-byte row pitch)", ka.k);
  if (ka.k > 0 && (!aligned16(ka.a) || !aligned16(ka.b)))
    return fail("gemm_wgmma: A and B must be 16-byte aligned for TMA");
  if (ka.m == 0 || ka.n == 0) return 0;
  if (ka.m > INT32_MAX || ka.n > INT32_MAX || ka.k > INT32_MAX)
    return fail("gemm_wgmma: M, N and K must be below 2^31 (TMA coordinates are int32)");
  const long long tiles = ((ka.m + ka_gemm::kBlockM - 1) / ka_gemm::kBlockM) *
                          ((ka.n + ka_gemm::kBlockN - 1) / ka_gemm::kBlockN);
  if (tiles > INT32_MAX) return fail("gemm_wgmma: too many output tiles (%lld)", tiles);

  if (load_encoder() != 0) return 1;
  if (tensor_map(g_map_a, ka.a, ka.m, ka.k, ka_gemm::kBlockM, "A") != 0) return 1;
  if (tensor_map(g_map_b, ka.b, ka.n, ka.k, ka_gemm::kBlockN, "B") != 0) return 1;
  int multiprocessors = 0;
  if (prepare_device(multiprocessors) != 0) return 1;

  const SplitPlan plan = plan_splits(tiles, ka, multiprocessors, workspace, workspace_bytes);
  float* partials = static_cast<float*>(workspace);
  const long long units = tiles * plan.splits;
  const int grid = static_cast<int>(units < multiprocessors ? units : multiprocessors);
  const cudaStream_t cuda_stream = static_cast<cudaStream_t>(stream);
  ka_gemm::gemm_wgmma_kernel<<<grid, ka_gemm::kThreads, ka_gemm::kSharedBytes, cuda_stream>>>(
      g_map_a.map, g_map_b.map, ka, partials, plan.splits, plan.steps);
  cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess) return fail("gemm_wgmma launch: %s", cudaGetErrorString(status));
  if (plan.splits > 1) {
    const long long items = ka.n % 2 == 0 ? ka.m * ka.n / 2 : ka.m * ka.n;
    const long long blocks = (items + 255) / 256;
    const int reduce_grid =
        static_cast<int>(blocks < 8LL * multiprocessors ? blocks : 8LL * multiprocessors);
    ka_gemm::reduce_splits_kernel<<<reduce_grid, 256, 0, cuda_stream>>>(ka, partials, plan.splits);
    status = cudaGetLastError();
    if (status != cudaSuccess)
      return fail("gemm_wgmma split-K reduction launch: %s", cudaGetErrorString(status));
  }
  return 0;
}
