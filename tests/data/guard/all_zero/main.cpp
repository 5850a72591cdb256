// Guard test case "all_zero" for problems/cpu/rmsnorm_f32: Writes zeros to the whole output
// without computing anything. Expected status: INCORRECT_NUMERICAL.
#include <cstdint>

#include "kernelarc/abi.h"

extern "C" int ka_run(const ka_tensor* /*inputs*/, int n_inputs, ka_tensor* outputs, int n_outputs,
                      void* /*stream*/, void* /*workspace*/, size_t /*workspace_bytes*/) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  float* y = static_cast<float*>(outputs[0].data);
  const int64_t elements = outputs[0].shape[0] * outputs[0].shape[1];
  for (int64_t i = 0; i < elements; ++i) y[i] = 0.0f;
  return 0;
}
