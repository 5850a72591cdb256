// Guard test case "legit_workspace_buffer" for problems/cpu/rmsnorm_f32 (issue 24, no false
// rejects): an honest two-pass kernel that declares a workspace of one float per row
// (kernelarc.workspace_bytes = "batch_size * 4") and keeps every row's reciprocal RMS there
// between its passes. Expected status: PASSED.
#include <cmath>
#include <cstdint>

#include "kernelarc/abi.h"

extern "C" int ka_run(const ka_tensor* inputs, int n_inputs, ka_tensor* outputs, int n_outputs,
                      void* /*stream*/, void* workspace, size_t workspace_bytes) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  const int64_t rows = inputs[0].shape[0];
  const int64_t cols = inputs[0].shape[1];
  const float* x = static_cast<const float*>(inputs[0].data);
  const float* w = static_cast<const float*>(inputs[1].data);
  float* y = static_cast<float*>(outputs[0].data);
  if (workspace_bytes < static_cast<size_t>(rows) * sizeof(float)) return 2;
  auto* rstd = static_cast<float*>(workspace);
  for (int64_t r = 0; r < rows; ++r) {
    float sum_squares = 0.0f;
    for (int64_t c = 0; c < cols; ++c) sum_squares += x[r * cols + c] * x[r * cols + c];
    rstd[r] = 1.0f / std::sqrt(sum_squares / static_cast<float>(cols) + 1e-6f);
  }
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) y[r * cols + c] = x[r * cols + c] * rstd[r] * w[c];
  return 0;
}
