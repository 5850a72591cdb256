// Hopper FP8 GEMM template of the scaled_gemm family (sm_90a): TMA loads, a warp-specialised
// wgmma e4m3 pipeline and the scales of scaled_kernel.cuh. This file is the host side: it checks
// what TMA needs, builds the tensor maps for this call's pointers, picks split-K for small M
// (partials in the workspace) and launches the persistent kernel.
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdarg>
#include <cstdint>
#include <cstdio>

#include "ka_problem.h"
#include "ka_sm90_gemm.cuh"
#include "kernelarc/abi.h"
#include "scaled_kernel.cuh"

#if !defined(BM) || !defined(BN) || !defined(STAGES) || !defined(CONSUMERS) || !defined(RASTER) || \
    !defined(PROMOTE) || !defined(PINGPONG) || !defined(CLUSTER)
#error \
    "scaled_gemm_wgmma needs -DBM -DBN -DSTAGES -DCONSUMERS -DRASTER -DPROMOTE -DPINGPONG -DCLUSTER"
#endif

namespace {

thread_local char g_error[512];

int fail(const char* format, ...) {
  va_list args;
  va_start(args, format);
  std::vsnprintf(g_error, sizeof g_error, format, args);
  va_end(args);
  return 1;
}

ka_sm90::KernelSetup g_setup;
ka_sm90::KMajorMap g_map_a, g_map_b;

}  // namespace

extern "C" const char* ka_last_error(void) {
  return g_error;
}

extern "C" int ka_run(const ka_tensor* inputs, int n_inputs, ka_tensor* outputs, int n_outputs,
                      void* stream, void* workspace, size_t workspace_bytes) {
  KaArgs ka;
  if (const char* message = ka_bind(inputs, n_inputs, outputs, n_outputs, &ka))
    return fail("scaled_gemm_wgmma: %s", message);
  // TMA needs every row start 16-byte aligned: the base pointers and the row pitch of K bytes.
  if (ka.k % 16 != 0)
    return fail("scaled_gemm_wgmma: K = %lld; the TMA loads need K %% 16 == 0 (16-byte row pitch)",
                ka.k);
  const auto aligned16 = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  if (ka.k > 0 && (!aligned16(ka.a) || !aligned16(ka.b)))
    return fail("scaled_gemm_wgmma: A and B must be 16-byte aligned for TMA");
  if (ka.m == 0 || ka.n == 0) return 0;
  if (ka.m > INT32_MAX || ka.n > INT32_MAX || ka.k > INT32_MAX)
    return fail("scaled_gemm_wgmma: M, N and K must be below 2^31 (TMA coordinates are int32)");
  const long long tiles_m = (ka.m + ka_scaled::kBlockM - 1) / ka_scaled::kBlockM;
  const long long tiles_n = (ka.n + ka_scaled::kBlockN - 1) / ka_scaled::kBlockN;
  const long long tiles = tiles_m * tiles_n;
  if (tiles > INT32_MAX) return fail("scaled_gemm_wgmma: too many output tiles (%lld)", tiles);

  if (!g_map_a.encode(ka.a, ka.m, ka.k, CU_TENSOR_MAP_DATA_TYPE_UINT8, 1, ka_scaled::kBlockM,
                      ka_scaled::kBlockK, "A", g_error, sizeof g_error) ||
      !g_map_b.encode(ka.b, ka.n, ka.k, CU_TENSOR_MAP_DATA_TYPE_UINT8, 1,
                      ka_scaled::Ring::kSliceRowsB, ka_scaled::kBlockK, "B", g_error,
                      sizeof g_error))
    return 1;
  int multiprocessors = 0, resident = 0;
  const cudaError_t prepared =
      g_setup.prepare(ka_scaled::scaled_gemm_wgmma_kernel, ka_scaled::kSharedBytes,
                      ka_scaled::kThreads, CLUSTER, multiprocessors, resident);
  if (prepared != cudaSuccess)
    return fail("scaled_gemm_wgmma: preparing the kernel: %s", cudaGetErrorString(prepared));

  const int k_steps = static_cast<int>((ka.k + ka_scaled::kBlockK - 1) / ka_scaled::kBlockK);
  const ka_sm90::SplitPlan plan =
      ka_sm90::plan_splits(tiles, ka.m, ka.n, k_steps, static_cast<size_t>(ka.m + ka.n) * ka.k,
                           multiprocessors, workspace, workspace_bytes);
  float* partials = static_cast<float*>(workspace);
  const int grid = ka_sm90::persistent_grid(tiles_m, tiles_n, plan.splits, resident, CLUSTER);
  const cudaStream_t cuda_stream = static_cast<cudaStream_t>(stream);
  ka_scaled::
      scaled_gemm_wgmma_kernel<<<grid, ka_scaled::kThreads, ka_scaled::kSharedBytes, cuda_stream>>>(
          g_map_a.map, g_map_b.map, ka, partials, plan.splits, plan.steps);
  cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess)
    return fail("scaled_gemm_wgmma launch: %s", cudaGetErrorString(status));
  if (plan.splits > 1) {
    const long long blocks = (ka.m * ka.n + 255) / 256;
    const int reduce_grid =
        static_cast<int>(blocks < 8LL * multiprocessors ? blocks : 8LL * multiprocessors);
    ka_scaled::reduce_splits_kernel<<<reduce_grid, 256, 0, cuda_stream>>>(ka, partials,
                                                                          plan.splits);
    status = cudaGetLastError();
    if (status != cudaSuccess)
      return fail("scaled_gemm_wgmma split-K reduction launch: %s", cudaGetErrorString(status));
  }
  return 0;
}
