// Family "fused": the kernels of a plan (docs/RECOGNITION.md §2), generated into ka_problem.h as
// structs that ka_fused.cuh's drivers run. ka_run checks the tensors, carves the temps from the
// workspace and launches every kernel in order on the given stream; nothing is allocated and
// nothing waits for the device.
#include <cuda_runtime.h>

#include <cstdio>

#include "ka_problem.h"

#if !defined(BLOCK_THREADS) || !defined(VEC) || !defined(ITEMS) || !defined(CACHE_VECS) || \
    !defined(ROW_MAPPING) || !defined(TILE_M) || !defined(TILE_N) || !defined(TILE_K) ||   \
    !defined(THREAD_M) || !defined(THREAD_N) || !defined(TENSOR_CORES)
#error "the fused template needs every knob of knobs.json as -D<KNOB>=<value>"
#endif

namespace {
thread_local char g_error[320];
}

extern "C" const char* ka_last_error(void) {
  return g_error;
}

extern "C" int ka_run(const ka_tensor* inputs, int n_inputs, ka_tensor* outputs, int n_outputs,
                      void* stream, void* workspace, size_t workspace_bytes) {
  KaArgs args{};
  if (const char* message = ka_bind(inputs, n_inputs, outputs, n_outputs, &args)) {
    std::snprintf(g_error, sizeof(g_error), "fused: %s", message);
    return 1;
  }
  if (workspace == nullptr) workspace_bytes = 0;
  if (const char* message = ka_plan_run(args, static_cast<cudaStream_t>(stream),
                                        static_cast<char*>(workspace), workspace_bytes)) {
    std::snprintf(g_error, sizeof(g_error), "fused: %s", message);
    return 1;
  }
  return 0;
}
