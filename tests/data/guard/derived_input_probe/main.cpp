// Guard test case "derived_input_probe" for problems/cpu/rmsnorm_f32 (issue 24, class 7): a
// correct kernel that fails when a call's input x differs from the previous call's in fewer than
// a tenth of its elements. The old guard derived every unchecked timed call's inputs from the
// previous one by flipping a few low bits, which a kernel can patch incrementally (recompute only
// the rows that changed) or hash around. Each timed call now runs on a fresh oracle draw, so the
// probe passes; with derived inputs it is a RUNTIME_ERROR. Expected status: PASSED.
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

extern "C" const char* ka_last_error() {
  return "inputs derived from an earlier call: fewer than a tenth of x's elements changed";
}

extern "C" int ka_run(const ka_tensor* inputs, int n_inputs, ka_tensor* outputs, int n_outputs,
                      void* /*stream*/, void* /*workspace*/, size_t /*workspace_bytes*/) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  const int64_t rows = inputs[0].shape[0];
  const int64_t cols = inputs[0].shape[1];
  const float* x = static_cast<const float*>(inputs[0].data);
  const float* w = static_cast<const float*>(inputs[1].data);
  float* y = static_cast<float*>(outputs[0].data);
  const auto n = static_cast<size_t>(rows * cols);
  if (g_previous.size() == n && n >= 10) {
    size_t changed = 0;
    for (size_t i = 0; i < n; ++i) changed += x[i] != g_previous[i];
    if (changed * 10 < n) return 7;
  }
  g_previous.assign(x, x + n);
  rmsnorm(x, w, y, rows, cols);
  return 0;
}
