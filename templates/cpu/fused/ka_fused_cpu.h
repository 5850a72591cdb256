// The loop drivers of the CPU fused template. The generated ka_problem.h (family "fused",
// src/synth/family_fused_cpu.cpp) includes this file and writes each kernel of the plan as
// bodies handed to these drivers; the drivers decide how the work spreads over threads.
//
// Index spaces are walked flattened, as row segments along the innermost dimension: a segment
// is one plain loop the compiler vectorises, and the div/mod to recover the outer indices is
// paid once per segment. Reductions are cut into chunks of CHUNK elements whose partial results
// are combined in chunk order, so a result never depends on the thread count, and a kernel with
// few kept points reduces its chunks in parallel.
#pragma once

#include <omp.h>

#include <algorithm>
#include <vector>

#ifndef THREADS
#define THREADS 0
#endif
#ifndef CHUNK
#define CHUNK 16384
#endif
#ifndef BLOCK
#define BLOCK 64
#endif
/// The depth of a matmul's packed operand panels.
#define KA_KBLOCK 256

/// The THREADS knob: a thread count, or 0 for every OpenMP thread.
inline int ka_thread_count() {
  return THREADS > 0 ? THREADS : omp_get_max_threads();
}

/// Calls segment(row, begin, end) for the part [first, last) of a flattened index space whose
/// innermost dimension has `inner` elements: row is the flat index of the outer dimensions and
/// [begin, end) a range of the innermost one.
template <typename Segment>
inline void ka_walk(long long first, long long last, long long inner, const Segment& segment) {
  while (first < last) {
    const long long row = first / inner;
    const long long begin = first - row * inner;
    const long long end = std::min(inner, begin + (last - first));
    segment(row, begin, end);
    first += end - begin;
  }
}

/// Runs segment over a whole index space of `total` elements, in chunks of CHUNK over the
/// threads.
template <typename Segment>
inline void ka_parallel_walk(long long total, long long inner, const Segment& segment) {
  if (total <= 0) return;
  const long long chunks = (total + CHUNK - 1) / CHUNK;
#pragma omp parallel for schedule(static) num_threads(ka_thread_count()) if (chunks > 1)
  for (long long chunk = 0; chunk < chunks; ++chunk)
    ka_walk(chunk * CHUNK, std::min(total, (chunk + 1) * CHUNK), inner, segment);
}

/// Runs body(i) for i < count over the threads (the kept points of a reduce, the lines of a
/// scan, the tiles of a matmul).
template <typename Body>
inline void ka_parallel_for(long long count, const Body& body) {
#pragma omp parallel for schedule(static) num_threads(ka_thread_count()) if (count > 1)
  for (long long i = 0; i < count; ++i) body(i);
}

/// The order of a topk row: (a, at a) before (b, at b) when a is larger (smaller unless
/// `largest`), NaN counting as larger than every number (as torch orders it), ties and two NaNs
/// to the lower position, so that a partial sort gives torch's stable order.
template <typename T>
inline bool ka_topk_before(T a, long long at_a, T b, long long at_b, bool largest) {
  const bool nan_a = a != a, nan_b = b != b;
  if (nan_a || nan_b) return nan_a && nan_b ? at_a < at_b : largest == nan_a;
  if (a == b) return at_a < at_b;
  return largest ? a > b : a < b;
}

/// A scatter kernel: body(begin, end, s) for the points [begin, end) of the `parallel` ones
/// (dims where no two points write one element) and point s of the `serial` ones: one block of
/// parallel points per thread (at least BLOCK points), within a block every serial point in
/// order, so each element receives its values in domain order. With blocks of BLOCK points each
/// thread walked every source row BLOCK elements at a time: SOL-ExecBench's moe_index_add took
/// 1.20 ms that way and 1.06 ms with a block per thread (2 threads of a 2-core VM).
template <typename Body>
inline void ka_scatter(long long parallel, long long serial, const Body& body) {
  const long long threads = ka_thread_count();
  const long long span = std::max<long long>(BLOCK, (parallel + threads - 1) / threads);
  const long long blocks = (parallel + span - 1) / span;
#pragma omp parallel for schedule(static) num_threads(ka_thread_count()) if (blocks > 1)
  for (long long block = 0; block < blocks; ++block) {
    const long long end = std::min(parallel, (block + 1) * span);
    for (long long s = 0; s < serial; ++s) body(block * span, end, s);
  }
}

/// A reduction over a flattened domain of `total` elements: pass(acc, row, begin, end) folds a
/// segment into acc; partial results of CHUNK-element chunks are folded in chunk order with
/// combine(earlier, later). With `parallel`, chunks run on the threads.
template <typename Acc, typename Pass, typename Combine>
inline Acc ka_reduce(long long total, long long inner, bool parallel, Acc identity,
                     const Pass& pass, const Combine& combine) {
  const long long chunks = (total + CHUNK - 1) / CHUNK;
  auto chunk_result = [&](long long chunk) {
    Acc acc = identity;
    ka_walk(chunk * CHUNK, std::min(total, (chunk + 1) * CHUNK), inner,
            [&](long long row, long long begin, long long end) { pass(acc, row, begin, end); });
    return acc;
  };
  Acc result = identity;
  if (!parallel || chunks < 2) {
    for (long long chunk = 0; chunk < chunks; ++chunk)
      result = combine(result, chunk_result(chunk));
    return result;
  }
  std::vector<Acc> partials(static_cast<std::size_t>(chunks), identity);
#pragma omp parallel for schedule(static) num_threads(ka_thread_count())
  for (long long chunk = 0; chunk < chunks; ++chunk) partials[chunk] = chunk_result(chunk);
  for (const Acc& partial : partials) result = combine(result, partial);
  return result;
}

/// Whether a reduce kernel should split its reduced domain over the threads: too few kept points
/// to occupy them, and enough reduced elements to be worth it.
inline bool ka_split_reduction(long long kept, long long reduced) {
  return kept < ka_thread_count() && reduced >= 2LL * CHUNK;
}

/// The running value of argmax / argmin: the extreme and its flattened index.
template <typename T>
struct ka_arg {
  T value;
  long long index;
};

/// Whether `candidate` replaces `best` in an argmax (argmin with `min`): strictly beyond it, or
/// NaN; a NaN best is final, so the first NaN wins as in torch.
template <bool kMin, typename T>
inline bool ka_arg_better(T candidate, T best) {
  if (best != best) return false;
  if (candidate != candidate) return true;
  return kMin ? candidate < best : candidate > best;
}

template <bool kMin, typename T>
inline ka_arg<T> ka_arg_combine(const ka_arg<T>& earlier, const ka_arg<T>& later) {
  return ka_arg_better<kMin>(later.value, earlier.value) ? later : earlier;
}
