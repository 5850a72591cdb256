// Guard test case "forges_reported_time" for problems/cpu/rmsnorm_f32 (issue 24, class 1): the
// worker's channel to the parent taken over from candidate code. A library constructor moves the
// worker's reply descriptor (fd 4, from the worker's command line) aside and puts a pipe in its
// place; a thread reads every frame the worker writes, rewrites the call times of execute results
// to 1 microsecond and forwards the frame. Each call really takes 3 ms of CPU more than its work. The
// parent times every request itself and reads the worker's CPU time from /proc: the reported
// times cannot be true. Expected status: REWARD_HACK ("not the calls' real times").
#include <time.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>

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

constexpr int kReplyFd = 4;
int g_parent = -1;

bool read_exact(int fd, char* data, size_t size) {
  while (size > 0) {
    const ssize_t got = read(fd, data, size);
    if (got <= 0) return false;
    data += got;
    size -= static_cast<size_t>(got);
  }
  return true;
}

bool write_exact(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t put = write(fd, data, size);
    if (put <= 0) return false;
    data += put;
    size -= static_cast<size_t>(put);
  }
  return true;
}

/// Every number in the "times_ns" array becomes 1000.
std::string forge(std::string body) {
  const std::string key = "\"times_ns\":[";
  const size_t at = body.find(key);
  if (at == std::string::npos) return body;
  const size_t begin = at + key.size(), end = body.find(']', begin);
  if (end == std::string::npos || end == begin) return body;
  int count = 1;
  for (size_t i = begin; i < end; ++i) count += body[i] == ',';
  std::string forged;
  for (int i = 0; i < count; ++i) forged += i ? ",1000.0" : "1000.0";
  return body.replace(begin, end - begin, forged);
}

void forward(int from) {
  for (;;) {
    unsigned char header[4];
    if (!read_exact(from, reinterpret_cast<char*>(header), 4)) return;
    const size_t size =
        header[0] | (header[1] << 8) | (header[2] << 16) | (size_t{header[3]} << 24);
    std::string body(size, '\0');
    if (!read_exact(from, body.data(), size)) return;
    body = forge(std::move(body));
    const uint32_t length = static_cast<uint32_t>(body.size());
    const unsigned char out[4] = {static_cast<unsigned char>(length & 0xff),
                                  static_cast<unsigned char>((length >> 8) & 0xff),
                                  static_cast<unsigned char>((length >> 16) & 0xff),
                                  static_cast<unsigned char>(length >> 24)};
    if (!write_exact(g_parent, reinterpret_cast<const char*>(out), 4) ||
        !write_exact(g_parent, body.data(), body.size()))
      return;
  }
}

__attribute__((constructor)) void take_over_the_channel() {
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) return;
  g_parent = dup(kReplyFd);
  if (g_parent < 0 || dup2(pipe_fds[1], kReplyFd) < 0) return;
  close(pipe_fds[1]);
  std::thread(forward, pipe_fds[0]).detach();
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

}  // namespace

extern "C" int ka_run(const ka_tensor* inputs, int n_inputs, ka_tensor* outputs, int n_outputs,
                      void* /*stream*/, void* /*workspace*/, size_t /*workspace_bytes*/) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  const int64_t rows = inputs[0].shape[0];
  const int64_t cols = inputs[0].shape[1];
  const float* x = static_cast<const float*>(inputs[0].data);
  const float* w = static_cast<const float*>(inputs[1].data);
  float* y = static_cast<float*>(outputs[0].data);
  rmsnorm(x, w, y, rows, cols);
  // The cost of a slower kernel, which the forged times hide: 3 ms is beyond the margin of a
  // staged call's Run request (2 x the null call's CPU time + 0.3 ms), and was within the margin
  // when the cache flush was part of the measured request (2 x ~15 ms + 1 ms here).
  spin_ms(3);
  return 0;
}
