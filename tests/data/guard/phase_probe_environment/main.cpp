// Guard test case "phase_probe_environment" for problems/cpu/rmsnorm_f32: on every call it looks
// for a sign that it is being timed (a "timing"/"bench" word in the environment, its command
// line, its working directory or the targets of its open file descriptors) and, finding none,
// falls back to skipping the work after its 12th call. The worker looks the same in every phase
// (one process, one command line, one directory, the same descriptors; only the parent knows
// which call is audited), so only the fallback fires, and the audit in the timed loop sees the
// NaN poison. Expected status: INCORRECT_NUMERICAL.
#include <unistd.h>

#include <cctype>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "kernelarc/abi.h"

extern char** environ;

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

bool mentions_timing(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text.find("timing") != std::string::npos || text.find("bench") != std::string::npos;
}

bool looks_timed() {
  for (char** variable = environ; *variable; ++variable) {
    if (mentions_timing(*variable)) return true;
  }
  std::ifstream cmdline("/proc/self/cmdline", std::ios::binary);
  if (mentions_timing(std::string(std::istreambuf_iterator<char>(cmdline), {}))) return true;
  std::error_code error;
  if (mentions_timing(std::filesystem::current_path(error).string())) return true;
  for (std::filesystem::directory_iterator it("/proc/self/fd", error), end; !error && it != end;
       it.increment(error)) {
    std::error_code unreadable;
    if (mentions_timing(std::filesystem::read_symlink(it->path(), unreadable).string())) {
      return true;
    }
  }
  return false;
}

// More than the 10 correctness trials plus part of the warm-up.
constexpr int kHonestCalls = 12;
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
  if (looks_timed() || ++g_calls > kHonestCalls) return 0;
  rmsnorm(x, w, y, rows, cols);
  return 0;
}
