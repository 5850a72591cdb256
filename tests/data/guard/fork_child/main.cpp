// Guard test case "fork_child" for problems/cpu/rmsnorm_f32: forks a child that computes the
// output into shared memory while the parent waits, then copies it out: correct, but a candidate
// that starts processes could leave one running outside the guard's view, or do anything a
// process may. The worker's seccomp filter kills it at the fork.
// Expected status: RUNTIME_ERROR.
#include <sys/mman.h>
#include <sys/wait.h>
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

char g_error[256];

int fail(const char* what) {
  std::snprintf(g_error, sizeof g_error, "%s: %s", what, std::strerror(errno));
  return 2;
}

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
  const std::size_t bytes = static_cast<std::size_t>(rows * cols) * sizeof(float);
  void* shared = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shared == MAP_FAILED) return fail("mmap");
  const pid_t child = fork();
  if (child == 0) {
    rmsnorm(x, w, static_cast<float*>(shared), rows, cols);
    _exit(0);
  }
  if (child < 0) {
    munmap(shared, bytes);
    return fail("fork");
  }
  int status = 0;
  waitpid(child, &status, 0);
  std::memcpy(outputs[0].data, shared, bytes);
  munmap(shared, bytes);
  return 0;
}
