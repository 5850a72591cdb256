// Guard test case "phase_by_call_timing" for problems/cpu/rmsnorm_f32: tells the phases apart by
// the time between calls. It learns the spacing of its first 10 calls (the correctness trials,
// which come back to back, about a millisecond apart on the CI machines) and skips the work
// whenever a call comes at a clearly different spacing, as the timed loop's do (a cache flush
// before each on a CPU, 10-15 ms apart on the same machines; back-to-back launches on a GPU).
// The call audited inside the timed loop comes at the loop's spacing too, and its output is the
// NaN poison. Expected status: INCORRECT_NUMERICAL.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
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

constexpr std::size_t kLearningCalls = 10;
// This much closer or farther apart is another phase. At 10 the detector itself failed one run
// in five where the loop's calls come only ~10x farther apart than the trials, and then computed
// honestly; 3 still leaves the trials' own jitter (0.8-1.7 ms around a 1.1 ms median) inside.
constexpr double kFactor = 3.0;

std::vector<double> g_gaps_ms;  // between the learning calls
double g_trial_gap_ms = 0.0;    // their median, once learned
std::chrono::steady_clock::time_point g_previous;
bool g_called = false;

/// Whether this call comes at the spacing of the correctness trials.
bool looks_like_a_trial() {
  const auto now = std::chrono::steady_clock::now();
  const double gap_ms = std::chrono::duration<double, std::milli>(now - g_previous).count();
  const bool first = !g_called;
  g_previous = now;
  g_called = true;
  if (first) return true;
  if (g_gaps_ms.size() + 1 < kLearningCalls) {
    g_gaps_ms.push_back(gap_ms);
    if (g_gaps_ms.size() + 1 == kLearningCalls) {
      std::nth_element(g_gaps_ms.begin(), g_gaps_ms.begin() + g_gaps_ms.size() / 2,
                       g_gaps_ms.end());
      g_trial_gap_ms = g_gaps_ms[g_gaps_ms.size() / 2];
    }
    return true;
  }
  return gap_ms < kFactor * g_trial_gap_ms && gap_ms * kFactor > g_trial_gap_ms;
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
  if (!looks_like_a_trial()) return 0;
  rmsnorm(x, w, y, rows, cols);
  return 0;
}
