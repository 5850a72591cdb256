// Element-wise map on the CPU: output[r, c] = expression(operands at (r, c)), see ka_problem.h.
//
// The output is cut into chunks of CHUNK consecutive elements, the unit of OpenMP scheduling,
// so that both many short rows and a few long ones spread over the threads. A chunk is walked
// as row segments; each segment is one simple loop that the compiler vectorises.
#include <algorithm>
#include <cstring>

#include "ka_cpu_entry.h"

#ifndef CHUNK
#define CHUNK 32768
#endif
#ifndef SIMD
#define SIMD 1
#endif

namespace {

void map_segment(const KaArgs& args, long long row, long long col, long long count) {
#if SIMD
#pragma omp simd
#endif
  for (long long i = 0; i < count; ++i) args.apply1(row, col + i);
}

void map_chunk(const KaArgs& args, long long begin, long long end) {
  const long long cols = args.cols();
  long long row = begin / cols;
  long long col = begin % cols;
  while (begin < end) {
    const long long count = std::min(cols - col, end - begin);
    map_segment(args, row, col, count);
    begin += count;
    ++row;
    col = 0;
  }
}

}  // namespace

static void ka_compute(const KaArgs& args) {
  const long long total = args.rows() * args.cols();
  if (total == 0) return;
  const long long chunks = (total + CHUNK - 1) / CHUNK;
  const int threads = ka_thread_count();
#pragma omp parallel for schedule(static) num_threads(threads) if (chunks > 1)
  for (long long chunk = 0; chunk < chunks; ++chunk)
    map_chunk(args, chunk * CHUNK, std::min(total, (chunk + 1) * CHUNK));
}
