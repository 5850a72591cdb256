// Guard test case "precomputes_in_helper_thread" for problems/cpu/rmsnorm_f32 (issue 24, class
// 8): a helper thread that outlives the calls does the untimed work. At its first call the kernel
// finds the worker's shared arena (a shared mapping holding the bytes of x) and starts one helper
// thread, which stays (a pool thread is allowed). The helper polls the arena; when the parent
// writes new inputs there it computes their output (and spends 2 ms, the cost of an expensive
// kernel) before the request even arrives, and the call merely copies the result when its inputs
// match. The parent reads the worker's per-thread CPU time from /proc around and between requests:
// threads that work while the worker waits, or beyond the reported call, are refused. Expected
// status: REWARD_HACK ("outside the timed call").
#include <time.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
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

uint64_t hash_bytes(const void* data, size_t size) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  uint64_t hash = 1469598103934665603ull;
  for (size_t i = 0; i < size; ++i) hash = (hash ^ bytes[i]) * 1099511628211ull;
  return hash;
}

/// Where `needle` lies in a shared, writable mapping of this process (the arena), or null.
const unsigned char* find_in_shared_memory(const void* needle, size_t size) {
  FILE* maps = std::fopen("/proc/self/maps", "r");
  if (!maps) return nullptr;
  char line[512];
  const unsigned char* found = nullptr;
  while (!found && std::fgets(line, sizeof line, maps)) {
    unsigned long start = 0, end = 0;
    char permissions[8] = {};
    if (std::sscanf(line, "%lx-%lx %7s", &start, &end, permissions) != 3) continue;
    if (permissions[0] != 'r' || permissions[3] != 's') continue;
    const auto* begin = reinterpret_cast<const unsigned char*>(start);
    for (unsigned long at = 0; at + size <= end - start && !found; at += 4)
      if (std::memcmp(begin + at, needle, size) == 0) found = begin + at;
  }
  std::fclose(maps);
  return found;
}

// Spins until this thread has run for `ms` of CPU time: the work of a real kernel, which costs
// CPU time however long the thread waits for a core on a loaded machine.
void spin_ms(int ms) {
  timespec start{}, now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &start);
  do {
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  } while ((now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000 < ms);
}

struct Precomputed {
  std::mutex mutex;
  uint64_t input_hash = 0;
  std::vector<float> output;
};

Precomputed g_ready;
std::once_flag g_started;

void helper(const float* arena_x, const float* arena_w, int64_t rows, int64_t cols) {
  const auto n = static_cast<size_t>(rows * cols);
  uint64_t seen = 0;
  std::vector<float> x(n), w(static_cast<size_t>(cols)), y(n);
  for (;;) {
    const uint64_t now = hash_bytes(arena_x, n * sizeof(float)) ^
                         (hash_bytes(arena_w, w.size() * sizeof(float)) * 31);
    if (now != seen) {
      seen = now;
      std::memcpy(x.data(), arena_x, n * sizeof(float));
      std::memcpy(w.data(), arena_w, w.size() * sizeof(float));
      rmsnorm(x.data(), w.data(), y.data(), rows, cols);
      spin_ms(2);  // the expensive part of the kernel, spent where no clock looks
      std::lock_guard<std::mutex> lock(g_ready.mutex);
      // Keyed on both inputs, from the copies the output was computed from: the parent may be
      // writing the arena while the helper reads it.
      g_ready.input_hash = hash_bytes(x.data(), n * sizeof(float)) ^
                           (hash_bytes(w.data(), w.size() * sizeof(float)) * 31);
      g_ready.output = y;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
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
  const auto n = static_cast<size_t>(rows * cols);
  std::call_once(g_started, [&] {
    const auto* arena_x =
        reinterpret_cast<const float*>(find_in_shared_memory(x, n * sizeof(float)));
    const auto* arena_w = reinterpret_cast<const float*>(
        find_in_shared_memory(w, static_cast<size_t>(cols) * sizeof(float)));
    if (arena_x && arena_w) std::thread(helper, arena_x, arena_w, rows, cols).detach();
  });
  {
    std::lock_guard<std::mutex> lock(g_ready.mutex);
    const uint64_t key = hash_bytes(x, n * sizeof(float)) ^
                         (hash_bytes(w, static_cast<size_t>(cols) * sizeof(float)) * 31);
    if (g_ready.output.size() == n && g_ready.input_hash == key) {
      std::memcpy(y, g_ready.output.data(), n * sizeof(float));
      return 0;
    }
  }
  rmsnorm(x, w, y, rows, cols);
  return 0;
}
