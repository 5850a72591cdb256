// Guard test case "correct_only_on_seen_inputs" for problems/cpu/rmsnorm_f32: remembers a hash of
// the inputs of its first 10 calls (the correctness trials) and computes only for those; any
// input it has not seen is skipped, leaving the NaN poison. The trials pass; the audit in the
// timed loop gives a draw it has never seen. Expected status: INCORRECT_NUMERICAL.
#include <cmath>
#include <cstdint>
#include <set>

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

/// FNV-1a over `bytes` bytes.
uint64_t content_hash(const void* data, std::size_t bytes, uint64_t hash) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < bytes; ++i) hash = (hash ^ p[i]) * 0x100000001b3ull;
  return hash;
}

constexpr int kLearningCalls = 10;
std::set<uint64_t> g_seen;
int g_calls = 0;

}  // namespace

extern "C" int ka_run(const ka_tensor* inputs, int n_inputs, ka_tensor* outputs, int n_outputs,
                      void* /*stream*/, void* /*workspace*/, size_t /*workspace_bytes*/) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  const int64_t rows = inputs[0].shape[0];
  const int64_t cols = inputs[0].shape[1];
  const float* x = static_cast<const float*>(inputs[0].data);
  const float* w = static_cast<const float*>(inputs[1].data);
  float* y = static_cast<float*>(outputs[0].data);
  const uint64_t key = content_hash(
      w, cols * sizeof(float), content_hash(x, rows * cols * sizeof(float), 0xcbf29ce484222325ull));
  if (++g_calls <= kLearningCalls) {
    g_seen.insert(key);
  } else if (!g_seen.contains(key)) {
    return 0;  // presumably a timed call: skip the work
  }
  rmsnorm(x, w, y, rows, cols);
  return 0;
}
