// Guard test case "softmax_without_max" for problems/cpu/softmax_f32 (issue 24, class 5): a row
// softmax computed as exp(x) / sum(exp(x)), without subtracting the row maximum first. On
// random-normal inputs it matches the reference; users' logits are larger (rows offset by 100,
// magnitudes of hundreds), where exp overflows to infinity and the quotient is NaN. The oracle
// now draws such structured inputs beside randn. Expected status: INCORRECT_NUMERICAL.
#include <cmath>
#include <cstdint>

#include "kernelarc/abi.h"

extern "C" int ka_run(const ka_tensor* inputs, int n_inputs, ka_tensor* outputs, int n_outputs,
                      void* /*stream*/, void* /*workspace*/, size_t /*workspace_bytes*/) {
  if (n_inputs != 1 || n_outputs != 1) return 1;
  const int64_t cols = inputs[0].shape[inputs[0].ndim - 1];
  int64_t numel = 1;
  for (int d = 0; d < inputs[0].ndim; ++d) numel *= inputs[0].shape[d];
  const float* x = static_cast<const float*>(inputs[0].data);
  float* y = static_cast<float*>(outputs[0].data);
  for (int64_t r = 0; r < numel / cols; ++r) {
    float sum = 0.0f;
    for (int64_t c = 0; c < cols; ++c) sum += std::exp(x[r * cols + c]);
    for (int64_t c = 0; c < cols; ++c) y[r * cols + c] = std::exp(x[r * cols + c]) / sum;
  }
  return 0;
}
