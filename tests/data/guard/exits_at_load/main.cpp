// Guard test case "exits_at_load" for problems/cpu/rmsnorm_f32: a correct kernel whose library
// constructor calls _exit(0), so the worker ends with a clean exit status while loading it,
// before any call. A worker that disappears during the load must count as a failure, not a pass.
// Expected status: RUNTIME_ERROR.
#include <unistd.h>

#include <cmath>
#include <cstdint>

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

__attribute__((constructor)) void leave() {
  _exit(0);
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
  rmsnorm(x, w, y, rows, cols);
  return 0;
}
