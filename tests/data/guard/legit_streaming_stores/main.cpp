// Guard test case "legit_streaming_stores" for problems/cpu/rmsnorm_f32 (issue 24, no false
// rejects): an honest kernel that writes its output with non-temporal stores (SSE2 _mm_stream_si32
// on x86-64; plain stores elsewhere) and fences them before returning, as a bandwidth-bound kernel
// does to skip the cache. Expected status: PASSED.
#include <cmath>
#include <cstdint>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "kernelarc/abi.h"

extern "C" int ka_run(const ka_tensor* inputs, int n_inputs, ka_tensor* outputs, int n_outputs,
                      void* /*stream*/, void* /*workspace*/, size_t /*workspace_bytes*/) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  const int64_t rows = inputs[0].shape[0];
  const int64_t cols = inputs[0].shape[1];
  const float* x = static_cast<const float*>(inputs[0].data);
  const float* w = static_cast<const float*>(inputs[1].data);
  float* y = static_cast<float*>(outputs[0].data);
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = x + r * cols;
    float sum_squares = 0.0f;
    for (int64_t c = 0; c < cols; ++c) sum_squares += row[c] * row[c];
    const float rstd = 1.0f / std::sqrt(sum_squares / static_cast<float>(cols) + 1e-6f);
    for (int64_t c = 0; c < cols; ++c) {
      const float value = row[c] * rstd * w[c];
#if defined(__x86_64__)
      _mm_stream_si32(reinterpret_cast<int*>(y + r * cols + c), __builtin_bit_cast(int, value));
#else
      y[r * cols + c] = value;
#endif
    }
  }
#if defined(__x86_64__)
  _mm_sfence();
#endif
  return 0;
}
