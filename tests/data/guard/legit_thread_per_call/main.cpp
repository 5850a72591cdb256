// Guard test case "legit_thread_per_call" for problems/cpu/rmsnorm_f32 (issue 24, no false
// rejects): an honest kernel that starts a std::thread for the second half of the rows in every
// call and joins it before returning. Its work lies inside the call, so the thread and CPU-time
// checks must accept it. Expected status: PASSED.
#include <cmath>
#include <cstdint>
#include <thread>

#include "kernelarc/abi.h"

namespace {

void rmsnorm_rows(const float* x, const float* w, float* y, int64_t begin, int64_t end,
                  int64_t cols) {
  for (int64_t r = begin; r < end; ++r) {
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
  const int64_t half = rows / 2;
  std::thread second(rmsnorm_rows, x, w, y, half, rows, cols);
  rmsnorm_rows(x, w, y, 0, half, cols);
  second.join();
  return 0;
}
