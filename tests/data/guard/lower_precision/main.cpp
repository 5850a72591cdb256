// Guard test case "lower_precision" for problems/cpu/rmsnorm_f32: rounds the inputs to bfloat16
// and keeps every intermediate (products, the running sum of squares, the scaled result) in
// bfloat16, as a kernel that halves its memory traffic would. bfloat16 keeps 8 significant bits,
// so the output is off by about 1e-2 relative, far beyond the problem's 1e-4 tolerance.
// Expected status: INCORRECT_NUMERICAL.
#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernelarc/abi.h"

namespace {

/// `value` rounded to the nearest bfloat16 (ties to even), returned as a float.
float bf16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  bits += 0x7FFFu + ((bits >> 16) & 1u);
  bits &= 0xFFFF0000u;
  std::memcpy(&value, &bits, sizeof bits);
  return value;
}

void rmsnorm(const float* x, const float* w, float* y, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = x + r * cols;
    float sum_squares = 0.0f;
    for (int64_t c = 0; c < cols; ++c) {
      sum_squares = bf16(sum_squares + bf16(bf16(row[c]) * bf16(row[c])));
    }
    const float rstd = bf16(1.0f / std::sqrt(sum_squares / static_cast<float>(cols) + 1e-6f));
    for (int64_t c = 0; c < cols; ++c)
      y[r * cols + c] = bf16(bf16(bf16(row[c]) * rstd) * bf16(w[c]));
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
  return 0;
}
