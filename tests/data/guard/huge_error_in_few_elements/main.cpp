// Guard test case "huge_error_in_few_elements" for problems/cpu/rmsnorm_f32 (issue 24, class 4):
// correct except that one element in 200 is 1e30. A 99% matched ratio alone lets it pass; no
// element may miss its reference by more than the error cap (10 x (atol + rtol x the output's
// scale)). Needs a workload of at least 200 elements. Expected status: INCORRECT_NUMERICAL
// ("error cap").
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
  for (int64_t i = 0; i < rows * cols; i += 200) y[i] = 1e30f;
  return 0;
}
