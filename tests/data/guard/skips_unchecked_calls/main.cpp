// Guard test case "skips_unchecked_calls" for problems/cpu/rmsnorm_f32 (issue 24, class 2): the
// old guard checked one timed call of a chunk, always at correctness trial 0's address, and left
// the others unchecked. This kernel computes during its first 10 calls (the trials) and whenever
// its output lies at trial 0's address, and otherwise returns at once, leaving the poison: its
// timed calls would cost nothing. Every timed call is now a checked draw of its own.
// Expected status: INCORRECT_NUMERICAL ("audit at").
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

int g_calls = 0;
void* g_trial0_output = nullptr;

}  // namespace

extern "C" int ka_run(const ka_tensor* inputs, int n_inputs, ka_tensor* outputs, int n_outputs,
                      void* /*stream*/, void* /*workspace*/, size_t /*workspace_bytes*/) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  const int64_t rows = inputs[0].shape[0];
  const int64_t cols = inputs[0].shape[1];
  const float* x = static_cast<const float*>(inputs[0].data);
  const float* w = static_cast<const float*>(inputs[1].data);
  float* y = static_cast<float*>(outputs[0].data);
  const int call = g_calls++;
  if (call == 0) g_trial0_output = y;
  if (call < 10 || y == g_trial0_output) rmsnorm(x, w, y, rows, cols);
  return 0;
}
