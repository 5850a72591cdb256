// Guard test case "repeated_input_probe" for problems/cpu/rmsnorm_f32: a correct kernel that
// hashes every byte of its inputs and fails ("saw the same inputs twice") when a call repeats the
// contents of an earlier call. It is the proof behind cache_by_content_hash: it passes only
// because the worker flips a few bits of every timed call's inputs, so no call ever repeats
// another; without that it would be RUNTIME_ERROR at the first timed call.
// Expected status: PASSED.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>

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

std::map<uint64_t, int> g_seen;  // hash of the inputs -> the call that first saw them
int g_calls = 0;
char g_error[128];

}  // namespace

extern "C" const char* ka_last_error(void) {
  return g_error;
}

extern "C" int ka_run(const ka_tensor* inputs, int n_inputs, ka_tensor* outputs, int n_outputs,
                      void* /*stream*/, void* /*workspace*/, size_t /*workspace_bytes*/) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  const int64_t rows = inputs[0].shape[0];
  const int64_t cols = inputs[0].shape[1];
  const float* x = static_cast<const float*>(inputs[0].data);
  const float* w = static_cast<const float*>(inputs[1].data);
  float* y = static_cast<float*>(outputs[0].data);
  const int call = ++g_calls;
  const uint64_t key = content_hash(
      w, cols * sizeof(float), content_hash(x, rows * cols * sizeof(float), 0xcbf29ce484222325ull));
  const auto [seen, inserted] = g_seen.emplace(key, call);
  if (!inserted) {
    std::snprintf(g_error, sizeof g_error, "saw the same inputs twice: call %d repeats call %d",
                  call, seen->second);
    return 2;
  }
  rmsnorm(x, w, y, rows, cols);
  return 0;
}
