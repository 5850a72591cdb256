// Guard test case "wrong_result" for problems/cpu/rmsnorm_f32: Returns x * weight without
// dividing by the RMS of the row. Expected status: INCORRECT_NUMERICAL.
#include <cstdint>

#include "kernelarc/abi.h"

extern "C" int ka_run(const ka_tensor* inputs, int n_inputs, ka_tensor* outputs, int n_outputs,
                      void* /*stream*/, void* /*workspace*/, size_t /*workspace_bytes*/) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  const int64_t rows = inputs[0].shape[0];
  const int64_t cols = inputs[0].shape[1];
  const float* x = static_cast<const float*>(inputs[0].data);
  const float* w = static_cast<const float*>(inputs[1].data);
  float* y = static_cast<float*>(outputs[0].data);
  // The normalization is missing: every element is off by the row's RMS factor.
  for (int64_t i = 0; i < rows * cols; ++i) y[i] = x[i] * w[i % cols];
  return 0;
}
