// Guard test case "abort_mid_call" for problems/cpu/rmsnorm_f32: computes half the rows, then
// calls abort() (a failed assertion would do the same): SIGABRT kills the worker mid-call.
// Expected status: RUNTIME_ERROR.
#include <cmath>
#include <cstdint>
#include <cstdlib>

#include "kernelarc/abi.h"

namespace {

void rmsnorm(const float* x, const float* w, float* y, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = x + r * cols;
    float sum_squares = 0.0f;
    for (int64_t c = 0; c < cols; ++c) sum_squares += row[c] * row[c];
    const float rstd = 1.0f / std::sqrt(sum_squares / static_cast<float>(cols) + 1e-6f);
    for (int64_t c = 0; c < cols; ++c) y[r * cols + c] = row[c] * rstd * w[c];
  }
}

}  // namespace

extern "C" int ka_run(const ka_tensor* inputs, int n_inputs, ka_tensor* outputs, int n_outputs,
                      void* /*stream*/, void* /*workspace*/, size_t /*workspace_bytes*/) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  const int64_t rows = inputs[0].shape[0];
  const int64_t cols = inputs[0].shape[1];
  const float* x = static_cast<const float*>(inputs[0].data);
  const float* w = static_cast<const float*>(inputs[1].data);
  float* y = static_cast<float*>(outputs[0].data);
  rmsnorm(x, w, y, rows / 2, cols);
  std::abort();
}
