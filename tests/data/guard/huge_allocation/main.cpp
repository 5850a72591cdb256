// Guard test case "huge_allocation" for problems/cpu/rmsnorm_f32: Allocates 64 GiB with new[]
// and touches every page: out of memory (std::bad_alloc under the worker memory limit, else the
// OOM killer). Expected status: RUNTIME_ERROR.
#include <cmath>
#include <cstddef>
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
  constexpr std::size_t kBytes = std::size_t{64} << 30;
  char* scratch = new char[kBytes];
  volatile char* pages = scratch;  // volatile: the stores and so the allocation must stay
  for (std::size_t offset = 0; offset < kBytes; offset += 4096) pages[offset] = 1;
  rmsnorm(x, w, y, rows, cols);
  delete[] scratch;
  return 0;
}
