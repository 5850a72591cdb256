// The scaled_gemm family's tensor-core kernel as a solution: ka_run binds the tensors and
// launches ka_fp8_scaled_mma.cuh's kernel at the knob point (see that file for the design).
#include <cuda_runtime.h>

#include <cstdarg>
#include <cstdio>

#include "ka_fp8_scaled_mma.cuh"
#include "ka_problem.h"

#if !defined(BM) || !defined(BN) || !defined(BK) || !defined(WARPS_M) || !defined(WARPS_N) || \
    !defined(STAGES)
#error "scaled_gemm_mma needs -DBM -DBN -DBK -DWARPS_M -DWARPS_N -DSTAGES"
#endif

namespace {

thread_local char g_error[512];

int fail(const char* format, ...) {
  va_list args;
  va_start(args, format);
  std::vsnprintf(g_error, sizeof(g_error), format, args);
  va_end(args);
  return 1;
}

}  // namespace

extern "C" const char* ka_last_error(void) {
  return g_error;
}

extern "C" int ka_run(const ka_tensor* inputs, int n_inputs, ka_tensor* outputs, int n_outputs,
                      void* stream, void* workspace, size_t workspace_bytes) {
  (void)workspace;
  (void)workspace_bytes;
  KaArgs ka;
  if (const char* message = ka_bind(inputs, n_inputs, outputs, n_outputs, &ka))
    return fail("scaled_gemm_mma: %s", message);
  const cudaError_t status =
      ka_fp8::launch<BM, BN, BK, WARPS_M, WARPS_N, STAGES>(ka, static_cast<cudaStream_t>(stream));
  if (status != cudaSuccess) return fail("scaled_gemm_mma launch: %s", cudaGetErrorString(status));
  return 0;
}
