// Guard test case "cache_by_sampled_hash" for problems/cpu/rmsnorm_f32: keeps each output it
// computed, keyed by a hash of 64 evenly spaced elements of x and 64 of weight (cheap next to
// hashing everything), and copies it back on a hit. The few bits the worker flips in every timed
// call's inputs rarely fall on a sampled element, so timed calls hit; the twin audit gives the
// timing input with a few elements swapped within their rows, which the sample misses too: the
// stored output of the unswapped input comes back wrong at the swapped places.
// Expected status: INCORRECT_NUMERICAL.
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

constexpr int64_t kSamples = 64;

/// FNV-1a over the bits of kSamples elements spread evenly over `values` (all of them when
/// there are fewer).
uint64_t sampled_hash(const float* values, int64_t n, uint64_t hash) {
  const int64_t samples = n < kSamples ? n : kSamples;
  for (int64_t i = 0; i < samples; ++i) {
    uint32_t bits;
    std::memcpy(&bits, values + i * n / samples, sizeof bits);
    hash = (hash ^ bits) * 0x100000001b3ull;
  }
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
  const uint64_t key = sampled_hash(w, cols, sampled_hash(x, rows * cols, 0xcbf29ce484222325ull));
  const auto hit = g_cache.find(key);
  if (hit != g_cache.end() && hit->second.size() == n) {
    std::memcpy(y, hit->second.data(), n * sizeof(float));
    return 0;
  }
  rmsnorm(x, w, y, rows, cols);
  g_cache[key].assign(y, y + n);
  return 0;
}
