// Guard test case "reads_other_workspace" for problems/cpu/rmsnorm_f32 (issue 24, class 9): the
// old sandbox hid only the workspace in use, so another workspace's oracle cache (expected
// outputs) was readable. The test plants one at /tmp/kernelarc-other-workspace-<its pid>; the
// kernel opens it. The worker now reads only what a kernel needs (system directories, libraries,
// the build cache), so the open fails and the call reports why. Were it readable, the kernel
// computes and passes, which fails the test. Expected status: RUNTIME_ERROR
// ("Permission denied").
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>

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

char g_error[512];

}  // namespace

extern "C" const char* ka_last_error() {
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
  char path[256];
  std::snprintf(path, sizeof path,
                "/tmp/kernelarc-other-workspace-%d/oracle/planted.expected.safetensors",
                static_cast<int>(getppid()));
  const int fd = open(path, O_RDONLY);
  if (fd < 0) {
    std::snprintf(g_error, sizeof g_error, "open %s: %s", path, std::strerror(errno));
    return 2;
  }
  close(fd);
  rmsnorm(x, w, y, rows, cols);  // read it: a pass, which fails the test
  return 0;
}
