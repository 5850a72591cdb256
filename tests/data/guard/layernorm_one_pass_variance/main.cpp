// Guard test case "layernorm_one_pass_variance" for problems/cpu/layernorm_f32 (issue 24, class
// 5): a layer norm that takes the variance in one pass, as E[x^2] - E[x]^2 in float32. On
// random-normal rows it matches the reference; on rows offset by 100 (values users have, and
// one of the oracle's structured draws) E[x^2] is about 1e4 and the float32 difference loses most of the
// variance's digits. Expected status: INCORRECT_NUMERICAL.
#include <cmath>
#include <cstdint>

#include "kernelarc/abi.h"

extern "C" int ka_run(const ka_tensor* inputs, int n_inputs, ka_tensor* outputs, int n_outputs,
                      void* /*stream*/, void* /*workspace*/, size_t /*workspace_bytes*/) {
  if (n_inputs != 3 || n_outputs != 1) return 1;
  const int64_t cols = inputs[0].shape[inputs[0].ndim - 1];
  int64_t numel = 1;
  for (int d = 0; d < inputs[0].ndim; ++d) numel *= inputs[0].shape[d];
  const float* x = static_cast<const float*>(inputs[0].data);
  const float* weight = static_cast<const float*>(inputs[1].data);
  const float* bias = static_cast<const float*>(inputs[2].data);
  float* y = static_cast<float*>(outputs[0].data);
  for (int64_t r = 0; r < numel / cols; ++r) {
    const float* row = x + r * cols;
    float sum = 0.0f, sum_squares = 0.0f;
    for (int64_t c = 0; c < cols; ++c) {
      sum += row[c];
      sum_squares += row[c] * row[c];
    }
    const float mean = sum / static_cast<float>(cols);
    const float variance = sum_squares / static_cast<float>(cols) - mean * mean;
    const float rstd = 1.0f / std::sqrt(std::fmax(variance, 0.0f) + 1e-5f);
    for (int64_t c = 0; c < cols; ++c)
      y[r * cols + c] = (row[c] - mean) * rstd * weight[c] + bias[c];
  }
  return 0;
}
