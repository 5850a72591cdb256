// Guard test case "cache_by_content_hash" for problems/cpu/rmsnorm_f32: keeps each output it
// computed, keyed by a hash of every byte of x and weight, and copies it back on a hit. The cache
// is neutralized rather than caught: the worker flips a few bits of every timed call's inputs, so
// no call repeats the contents of an earlier one and the cache never hits (repeated_input_probe
// shows it). Every output is computed, so the guard rightly passes it.
// Expected status: PASSED.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
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

/// FNV-1a over `bytes` bytes.
uint64_t content_hash(const void* data, std::size_t bytes, uint64_t hash) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < bytes; ++i) hash = (hash ^ p[i]) * 0x100000001b3ull;
  return hash;
}

std::map<uint64_t, std::vector<float>> g_cache;

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
  const uint64_t key = content_hash(w, cols * sizeof(float),
                                    content_hash(x, n * sizeof(float), 0xcbf29ce484222325ull));
  const auto hit = g_cache.find(key);
  if (hit != g_cache.end() && hit->second.size() == n) {
    std::memcpy(y, hit->second.data(), n * sizeof(float));
    return 0;
  }
  rmsnorm(x, w, y, rows, cols);
  g_cache[key].assign(y, y + n);
  return 0;
}
