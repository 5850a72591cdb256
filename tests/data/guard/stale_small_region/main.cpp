// Guard test case "stale_small_region" for problems/cpu/rmsnorm_f32 (issue 24, class 4): skips
// the last 0.5% of the output's elements on every call after the first and copies the previous
// call's values there instead (a stale region). The matched ratio stays above 99%; the stale
// values miss their references by about the output's own scale, beyond the error cap. Needs a
// workload of at least 200 elements. Expected status: INCORRECT_NUMERICAL ("error cap").
#include <cmath>
#include <cstdint>
#include <vector>

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

std::vector<float> g_previous;

}  // namespace

extern "C" int ka_run(const ka_tensor* inputs, int n_inputs, ka_tensor* outputs, int n_outputs,
                      void* /*stream*/, void* /*workspace*/, size_t /*workspace_bytes*/) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  const int64_t rows = inputs[0].shape[0];
  const int64_t cols = inputs[0].shape[1];
  const float* x = static_cast<const float*>(inputs[0].data);
  const float* w = static_cast<const float*>(inputs[1].data);
  float* y = static_cast<float*>(outputs[0].data);
  const auto n = static_cast<size_t>(rows * cols);
  std::vector<float> full(n);
  rmsnorm(x, w, full.data(), rows, cols);
  const size_t stale = n / 200;
  for (size_t i = 0; i < n; ++i)
    y[i] = (g_previous.size() == n && i >= n - stale) ? g_previous[i] : full[i];
  g_previous.assign(y, y + n);
  return 0;
}
