// A kernel plan on the CPU (family "fused"): ka_problem.h holds the plan's kernels as
// functions over the drivers of ka_fused_cpu.h; this file is the exported entry. It binds the
// tensors, places the temps in the workspace the guard passes (WORKSPACE_BYTES of the binding)
// and runs the kernels in order (a scatter kernel's index out of range is an error).
#include <cstdio>

#include "ka_problem.h"

namespace {

thread_local char g_ka_error[256];

}  // namespace

extern "C" const char* ka_last_error(void) {
  return g_ka_error;
}

extern "C" int ka_run(const ka_tensor* inputs, int n_inputs, ka_tensor* outputs, int n_outputs,
                      void* /*stream*/, void* workspace, size_t workspace_bytes) {
  KaArgs ka;
  const char* error = ka_bind(inputs, n_inputs, outputs, n_outputs, &ka);
  if (error == nullptr) error = ka_attach_workspace(&ka, workspace, workspace_bytes);
  if (error == nullptr) error = ka_plan_run(ka);
  if (error != nullptr) {
    std::snprintf(g_ka_error, sizeof g_ka_error, "%s", error);
    return 1;
  }
  return 0;
}
