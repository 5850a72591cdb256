// Guard test case "patches_libc_code" for problems/cpu/rmsnorm_f32: a correct kernel whose
// library constructor rewrites the first bytes of libc's clock_gettime into a jump to a clock
// running ten times too slowly, so every timed call would look ten times faster. The worker
// fingerprints libc's executable segments before loading a candidate and again after: the load
// is refused. Expected status: REWARD_HACK.
#include <dlfcn.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
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
timespec g_start;

int slow_clock_gettime(clockid_t id, timespec* ts) {
  if (syscall(SYS_clock_gettime, id, ts) != 0) return -1;
  if (id != CLOCK_MONOTONIC) return 0;
  const int64_t elapsed =
      (ts->tv_sec - g_start.tv_sec) * 1000000000ll + (ts->tv_nsec - g_start.tv_nsec);
  const int64_t slowed = g_start.tv_nsec + elapsed / 10;
  ts->tv_sec = g_start.tv_sec + slowed / 1000000000ll;
  ts->tv_nsec = slowed % 1000000000ll;
  return 0;
}

/// An absolute jump to `target`, at most 16 bytes; returns its length, 0 on other machines.
std::size_t jump_to(const void* target, unsigned char* code) {
  const auto address = reinterpret_cast<uint64_t>(target);
#if defined(__x86_64__)
  code[0] = 0x48;  // movabs rax, address
  code[1] = 0xB8;
  std::memcpy(code + 2, &address, 8);
  code[10] = 0xFF;  // jmp rax
  code[11] = 0xE0;
  return 12;
#elif defined(__aarch64__)
  const uint32_t load = 0x58000050;    // ldr x16, #8
  const uint32_t branch = 0xD61F0200;  // br x16
  std::memcpy(code, &load, 4);
  std::memcpy(code + 4, &branch, 4);
  std::memcpy(code + 8, &address, 8);
  return 16;
#else
  (void)address;
  (void)code;
  return 0;
#endif
}

__attribute__((constructor)) void patch_libc_clock() {
  syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &g_start);
  void* libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  auto* target = static_cast<unsigned char*>(libc ? dlsym(libc, "clock_gettime") : nullptr);
  if (!target) {
    std::snprintf(g_error, sizeof g_error, "libc's clock_gettime not found");
    return;
  }
  unsigned char code[16];
  const std::size_t length = jump_to(reinterpret_cast<const void*>(&slow_clock_gettime), code);
  if (length == 0) {
    std::snprintf(g_error, sizeof g_error, "no jump encoding for this machine");
    return;
  }
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t first = reinterpret_cast<uintptr_t>(target) & ~(page - 1);
  const uintptr_t end = reinterpret_cast<uintptr_t>(target) + length;
  // Read and execute stay: other threads may be running libc code on the same pages.
  if (mprotect(reinterpret_cast<void*>(first), end - first, PROT_READ | PROT_WRITE | PROT_EXEC) !=
      0) {
    std::snprintf(g_error, sizeof g_error, "mprotect of libc's code: %s", std::strerror(errno));
    return;
  }
  for (std::size_t i = 0; i < length; ++i) target[i] = code[i];
  __builtin___clear_cache(reinterpret_cast<char*>(target), reinterpret_cast<char*>(end));
  mprotect(reinterpret_cast<void*>(first), end - first, PROT_READ | PROT_EXEC);
}

}  // namespace

extern "C" const char* ka_last_error(void) {
  return g_error;
}

extern "C" int ka_run(const ka_tensor* inputs, int n_inputs, ka_tensor* outputs, int n_outputs,
                      void* /*stream*/, void* /*workspace*/, size_t /*workspace_bytes*/) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  if (g_error[0] != '\0') return 2;  // the patch failed: nothing to test
  const int64_t rows = inputs[0].shape[0];
  const int64_t cols = inputs[0].shape[1];
  const float* x = static_cast<const float*>(inputs[0].data);
  const float* w = static_cast<const float*>(inputs[1].data);
  float* y = static_cast<float*>(outputs[0].data);
  rmsnorm(x, w, y, rows, cols);
  return 0;
}
