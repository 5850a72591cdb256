// Guard test case "legit_static_table" for problems/cpu/rmsnorm_f32 (issue 24, no false
// rejects): an honest kernel that reads a static table filled once when the library loads (the
// reciprocal of every row length up to 8192, instead of a division per row). State that does not
// depend on the inputs is no cache of results. Expected status: PASSED.
#include <cmath>
#include <cstdint>

#include "kernelarc/abi.h"

namespace {

constexpr int64_t kTable = 8192;
float g_reciprocal[kTable + 1];

__attribute__((constructor)) void fill_table() {
  for (int64_t n = 1; n <= kTable; ++n) g_reciprocal[n] = 1.0f / static_cast<float>(n);
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
  const float inverse = cols <= kTable ? g_reciprocal[cols] : 1.0f / static_cast<float>(cols);
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = x + r * cols;
    float sum_squares = 0.0f;
    for (int64_t c = 0; c < cols; ++c) sum_squares += row[c] * row[c];
    const float rstd = 1.0f / std::sqrt(sum_squares * inverse + 1e-6f);
    for (int64_t c = 0; c < cols; ++c) y[r * cols + c] = row[c] * rstd * w[c];
  }
  return 0;
}
