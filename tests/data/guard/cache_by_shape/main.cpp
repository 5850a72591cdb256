// Guard test case "cache_by_shape" for problems/cpu/rmsnorm_f32: computes once per shape and
// copies that first output back on every later call of the same shape. The correctness trials
// draw new inputs of one shape, so trial 1 already gets trial 0's output.
// Expected status: INCORRECT_NUMERICAL.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <utility>
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

std::map<std::pair<int64_t, int64_t>, std::vector<float>> g_cache;

}  // namespace

extern "C" int ka_run(const ka_tensor* inputs, int n_inputs, ka_tensor* outputs, int n_outputs,
                      void* /*stream*/, void* /*workspace*/, size_t /*workspace_bytes*/) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  const int64_t rows = inputs[0].shape[0];
  const int64_t cols = inputs[0].shape[1];
  const float* x = static_cast<const float*>(inputs[0].data);
  const float* w = static_cast<const float*>(inputs[1].data);
  float* y = static_cast<float*>(outputs[0].data);
  const auto n = static_cast<std::size_t>(rows * cols);
  const auto hit = g_cache.find({rows, cols});
  if (hit != g_cache.end()) {
    std::memcpy(y, hit->second.data(), n * sizeof(float));
    return 0;
  }
  rmsnorm(x, w, y, rows, cols);
  g_cache[{rows, cols}].assign(y, y + n);
  return 0;
}
