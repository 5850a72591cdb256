// Guard test case "legit_persistent_pool" for problems/cpu/rmsnorm_f32 (issue 24, no false
// rejects): an honest kernel with a persistent pool of one thread, started at the first call. The
// thread sleeps on a condition variable between calls (no CPU while idle), takes the second half
// of the rows of each call, and the call waits for it before returning. Expected status: PASSED.
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

#include "kernelarc/abi.h"

namespace {

void rmsnorm_rows(const float* x, const float* w, float* y, int64_t begin, int64_t end,
                  int64_t cols) {
  for (int64_t r = begin; r < end; ++r) {
    const float* row = x + r * cols;
    float sum_squares = 0.0f;
    for (int64_t c = 0; c < cols; ++c) sum_squares += row[c] * row[c];
    const float rstd = 1.0f / std::sqrt(sum_squares / static_cast<float>(cols) + 1e-6f);
    for (int64_t c = 0; c < cols; ++c) y[r * cols + c] = row[c] * rstd * w[c];
  }
}

struct Job {
  const float* x = nullptr;
  const float* w = nullptr;
  float* y = nullptr;
  int64_t begin = 0, end = 0, cols = 0;
};

std::mutex g_mutex;
std::condition_variable g_wake, g_done;
Job g_job;
bool g_pending = false;

void pool_thread() {
  for (;;) {
    std::unique_lock<std::mutex> lock(g_mutex);
    g_wake.wait(lock, [] { return g_pending; });
    const Job job = g_job;
    lock.unlock();
    rmsnorm_rows(job.x, job.w, job.y, job.begin, job.end, job.cols);
    lock.lock();
    g_pending = false;
    g_done.notify_one();
  }
}

std::once_flag g_started;

}  // namespace

extern "C" int ka_run(const ka_tensor* inputs, int n_inputs, ka_tensor* outputs, int n_outputs,
                      void* /*stream*/, void* /*workspace*/, size_t /*workspace_bytes*/) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  const int64_t rows = inputs[0].shape[0];
  const int64_t cols = inputs[0].shape[1];
  const float* x = static_cast<const float*>(inputs[0].data);
  const float* w = static_cast<const float*>(inputs[1].data);
  float* y = static_cast<float*>(outputs[0].data);
  std::call_once(g_started, [] { std::thread(pool_thread).detach(); });
  const int64_t half = rows / 2;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_job = {x, w, y, half, rows, cols};
    g_pending = true;
  }
  g_wake.notify_one();
  rmsnorm_rows(x, w, y, 0, half, cols);
  std::unique_lock<std::mutex> lock(g_mutex);
  g_done.wait(lock, [] { return !g_pending; });
  return 0;
}
