// Scaled dot-product attention on the CPU, flash style: the score matrix is never written out.
//
// A task is (sequence b, key/value head kvh, a block of BLOCK_M consecutive queries): its rows
// are those queries times the GROUP query heads that read head kvh, so each key and value row is
// loaded and converted once for the whole group. The task walks the keys in tiles of BLOCK_N:
//   1. the tile's keys are converted to float into a per-thread buffer (QK_FORM outer: transposed,
//      key index fastest; dot: row by row, or read in place for float32 input without STAGE_KV;
//      auto: outer for tasks of more than 8 rows, dot for smaller ones such as a decode step's
//      GROUP rows), the values likewise (row by row, or in place); with PREFETCH the next
//      tile's rows are prefetched meanwhile (paged rows are scattered);
//   2. S = (scale * q) k^T for ROW_TILE rows at a time, SIMD_WIDTH float32 lanes per step (the
//      outer form broadcasts a query element against SIMD_WIDTH keys, the dot form runs the lanes
//      along the head dimension and folds them per key);
//   3. an online softmax per row in float32: the running maximum m, the running sum l of
//      exp(s - m) and the accumulator rescaled by exp(m_old - m_new) when the maximum grows;
//   4. acc += P V with ROW_TILE x SIMD_WIDTH register tiles along the head dimension.
// Causal masking (bottom-right aligned, from ka.causal_limit) only touches the tiles that cross a
// row's limit; tiles past the block's last visible key are never visited. A row that sees no key
// (kv_len 0, or a causal limit of 0) gets a zero output and an lse of -inf.
//
// Tasks go to OpenMP threads by SCHEDULE (heavy_first: dynamic, longest tasks first, which evens
// out causal triangles). Below PARALLEL_MIN_WORK multiply-adds the call stays on one thread.
#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "ka_cpu_entry.h"

namespace {

constexpr int kDim = KA_HEAD_DIM;
constexpr int kGroup = KA_GROUP;
constexpr int kBlockM = BLOCK_M;
constexpr int kBlockN = BLOCK_N;
constexpr int kWidth = SIMD_WIDTH;
constexpr int kRowTile = ROW_TILE;
constexpr int kRowsMax = (kBlockM * kGroup + kRowTile - 1) / kRowTile * kRowTile;
// Head-dimension columns handled in whole SIMD_WIDTH chunks; the rest (if any) one by one.
constexpr int kDimFull = kDim / kWidth * kWidth;
// float32 input read in place (no staging copy); the outer form always stages its keys.
constexpr bool kInPlace = std::is_same_v<ka_qkv_t, float> && !STAGE_KV;
// QK_FORM auto: the outer form for tasks of more than this many rows, the dot form below (a
// decode task has GROUP rows, too few to pay for the transposition).
constexpr int kAutoOuterRows = 8;
static_assert(kBlockN % kWidth == 0, "BLOCK_N must be a multiple of SIMD_WIDTH");

struct Task {
  long long b;
  long long i0;  // first query of the block
  int kvh;
  long long cost;
};

/// Per-thread buffers, sized once per thread (the OpenMP workers persist, so later calls fault in
/// no fresh pages).
struct Workspace {
  std::vector<float> q;     // kRowsMax x kDim: scale * q
  std::vector<float> acc;   // kRowsMax x kDim: unnormalised output
  std::vector<float> s;     // kRowsMax x kBlockN: scores, then probabilities
  std::vector<float> keys;  // outer: kDim x kBlockN (transposed); dot: kBlockN x kDim
  std::vector<float> values;  // kBlockN x kDim
  std::vector<float> m, l, alpha;
  std::vector<long long> limit;  // keys [0, limit) visible to the row
  std::vector<const float*> key_rows, value_rows;
  long long kv_end = 0;  // the current task's last visible key + 1

  void reserve() {
    if (!q.empty()) return;
    q.assign(static_cast<size_t>(kRowsMax) * kDim, 0.0f);
    acc.assign(static_cast<size_t>(kRowsMax) * kDim, 0.0f);
    s.assign(static_cast<size_t>(kRowsMax) * kBlockN, 0.0f);
    keys.assign(static_cast<size_t>(kBlockN) * kDim, 0.0f);
    values.assign(static_cast<size_t>(kBlockN) * kDim, 0.0f);
    m.assign(kRowsMax, 0.0f);
    l.assign(kRowsMax, 0.0f);
    alpha.assign(kRowsMax, 0.0f);
    limit.assign(kRowsMax, 0);
    key_rows.assign(kBlockN, nullptr);
    value_rows.assign(kBlockN, nullptr);
  }
};

Workspace& workspace() {
  thread_local Workspace ws;
  ws.reserve();
  return ws;
}

/// Converts (or points at) the keys and values j0 .. j0 + count of the tile.
template <bool kOuterForm>
void stage_tile(const KaArgs& ka, const Task& t, long long j0, int count, Workspace& ws) {
  constexpr bool kKeysInPlace = kInPlace && !kOuterForm;
  float* keys = ws.keys.data();
  float* values = ws.values.data();
  if constexpr (kOuterForm) {
    // Transposed in groups of 8 keys: 8 rows read in step, 8 contiguous floats written per
    // dimension (one key at a time would write a whole column, a cache line per element).
    int n0 = 0;
    for (; n0 + 8 <= count; n0 += 8) {
      const ka_qkv_t* rows[8];
      for (int u = 0; u < 8; ++u) rows[u] = ka.k_row(t.b, j0 + n0 + u, t.kvh);
      for (int d = 0; d < kDim; ++d) {
        float* dst = keys + d * kBlockN + n0;
        for (int u = 0; u < 8; ++u) dst[u] = ka_to_float(rows[u][d]);
      }
    }
    for (; n0 < count; ++n0) {
      const ka_qkv_t* k = ka.k_row(t.b, j0 + n0, t.kvh);
      for (int d = 0; d < kDim; ++d) keys[d * kBlockN + n0] = ka_to_float(k[d]);
    }
  }
#if PREFETCH
  // The next tile's rows, while this one is converted: the rows of a paged cache are scattered,
  // so the hardware prefetcher does not follow them across pages.
  {
    const long long next = j0 + kBlockN;
    const long long next_count = std::min<long long>(kBlockN, ws.kv_end - next);
    constexpr int kLine = 64 / static_cast<int>(sizeof(ka_qkv_t));
    for (long long n = 0; n < next_count; ++n) {
      const ka_qkv_t* k = ka.k_row(t.b, next + n, t.kvh);
      const ka_qkv_t* v = ka.v_row(t.b, next + n, t.kvh);
      for (int d = 0; d < kDim; d += kLine) {
        __builtin_prefetch(k + d);
        __builtin_prefetch(v + d);
      }
    }
  }
#endif
  for (int n = 0; n < count; ++n) {
    const ka_qkv_t* k = ka.k_row(t.b, j0 + n, t.kvh);
    const ka_qkv_t* v = ka.v_row(t.b, j0 + n, t.kvh);
    if constexpr (kOuterForm) {
      (void)k;
    } else if constexpr (kKeysInPlace) {
      ws.key_rows[n] = reinterpret_cast<const float*>(k);
    } else {
      float* dst = keys + static_cast<size_t>(n) * kDim;
#pragma omp simd
      for (int d = 0; d < kDim; ++d) dst[d] = ka_to_float(k[d]);
      ws.key_rows[n] = dst;
    }
    if constexpr (kInPlace) {
      ws.value_rows[n] = reinterpret_cast<const float*>(v);
    } else {
      float* dst = values + static_cast<size_t>(n) * kDim;
#pragma omp simd
      for (int d = 0; d < kDim; ++d) dst[d] = ka_to_float(v[d]);
      ws.value_rows[n] = dst;
    }
  }
  if constexpr (kOuterForm) {
    // Columns past the tile's end read as zero scores (they are masked below anyway).
    // (tile_scores reads whole SIMD_WIDTH column groups).
    const int columns = (count + kWidth - 1) / kWidth * kWidth;
    if (count < columns)
      for (int d = 0; d < kDim; ++d)
        for (int n = count; n < columns; ++n) keys[d * kBlockN + n] = 0.0f;
  }
}

/// s[r][n] = q[r] . key[n] for the rows [0, rows) (a multiple of kRowTile) and the keys [0, count).
template <bool kOuterForm>
void tile_scores(int rows, int count, Workspace& ws) {
  const float* q = ws.q.data();
  float* s = ws.s.data();
  if constexpr (kOuterForm) {
    const float* kt = ws.keys.data();
    const int columns = (count + kWidth - 1) / kWidth * kWidth;  // <= kBlockN
    for (int r0 = 0; r0 < rows; r0 += kRowTile) {
      for (int c0 = 0; c0 < columns; c0 += kWidth) {
        float a[kRowTile][kWidth] = {};
        for (int d = 0; d < kDim; ++d) {
          const float* kp = kt + d * kBlockN + c0;
          for (int rr = 0; rr < kRowTile; ++rr) {
            const float qv = q[(r0 + rr) * kDim + d];
#pragma omp simd
            for (int c = 0; c < kWidth; ++c) a[rr][c] += qv * kp[c];
          }
        }
        for (int rr = 0; rr < kRowTile; ++rr) {
          float* out = s + (r0 + rr) * kBlockN + c0;
#pragma omp simd
          for (int c = 0; c < kWidth; ++c) out[c] = a[rr][c];
        }
      }
    }
  } else {
    for (int r0 = 0; r0 < rows; r0 += kRowTile) {
      for (int n = 0; n < count; ++n) {
        const float* kp = ws.key_rows[n];
        float a[kRowTile][kWidth] = {};
        for (int d0 = 0; d0 < kDimFull; d0 += kWidth) {
          for (int rr = 0; rr < kRowTile; ++rr) {
            const float* qp = q + (r0 + rr) * kDim + d0;
#pragma omp simd
            for (int c = 0; c < kWidth; ++c) a[rr][c] += qp[c] * kp[d0 + c];
          }
        }
        for (int rr = 0; rr < kRowTile; ++rr) {
          float total = 0.0f;
          for (int c = 0; c < kWidth; ++c) total += a[rr][c];
          for (int d = kDimFull; d < kDim; ++d) total += q[(r0 + rr) * kDim + d] * kp[d];
          s[(r0 + rr) * kBlockN + n] = total;
        }
      }
    }
  }
}

/// The online-softmax step of the tile for every row: masks the keys a row does not see, turns
/// its scores into exp(s - m_new) and records the factor alpha = exp(m_old - m_new) that the
/// accumulator takes.
void tile_softmax(int rows, long long j0, int count, Workspace& ws) {
  // Whole groups of 8 columns (a short last tile does not pay for BLOCK_N exps); the columns
  // past `count` are masked, and tile_values reads only the first `count`.
  const int columns = (count + 7) / 8 * 8;
  for (int r = 0; r < rows; ++r) {
    float* sr = ws.s.data() + r * kBlockN;
    const long long visible = ws.limit[r] - j0;
    const int lim = visible <= 0 ? 0 : (visible < count ? static_cast<int>(visible) : count);
    if (lim == 0) {
      // Nothing visible in this tile: the row's state stands, its probabilities are 0.
      ws.alpha[r] = 1.0f;
#pragma omp simd
      for (int n = 0; n < columns; ++n) sr[n] = 0.0f;
      continue;
    }
    float tile_max = -INFINITY;
#pragma omp simd reduction(max : tile_max)
    for (int n = 0; n < columns; ++n) {
      const float value = n < lim ? sr[n] : -INFINITY;
      tile_max = value > tile_max ? value : tile_max;
    }
    const float m_old = ws.m[r];
    const float m_new = m_old > tile_max ? m_old : tile_max;
    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (int n = 0; n < columns; ++n) {
      const float p = n < lim ? ka_exp(sr[n] - m_new) : 0.0f;
      sr[n] = p;
      sum += p;
    }
    const float alpha = m_old == -INFINITY ? 0.0f : ka_exp(m_old - m_new);
    ws.alpha[r] = alpha;
    ws.l[r] = ws.l[r] * alpha + sum;
    ws.m[r] = m_new;
  }
}

/// acc[r] = alpha[r] * acc[r] + sum_n p[r][n] * value[n] for the rows [0, rows).
void tile_values(int rows, int count, Workspace& ws) {
  const float* p = ws.s.data();
  float* acc = ws.acc.data();
  const float* const* value_rows = ws.value_rows.data();
  for (int r0 = 0; r0 < rows; r0 += kRowTile) {
    for (int d0 = 0; d0 < kDimFull; d0 += kWidth) {
      float o[kRowTile][kWidth];
      for (int rr = 0; rr < kRowTile; ++rr) {
        const float alpha = ws.alpha[r0 + rr];
        const float* src = acc + (r0 + rr) * kDim + d0;
#pragma omp simd
        for (int c = 0; c < kWidth; ++c) o[rr][c] = src[c] * alpha;
      }
      for (int n = 0; n < count; ++n) {
        const float* vp = value_rows[n] + d0;
        for (int rr = 0; rr < kRowTile; ++rr) {
          const float pv = p[(r0 + rr) * kBlockN + n];
#pragma omp simd
          for (int c = 0; c < kWidth; ++c) o[rr][c] += pv * vp[c];
        }
      }
      for (int rr = 0; rr < kRowTile; ++rr) {
        float* dst = acc + (r0 + rr) * kDim + d0;
#pragma omp simd
        for (int c = 0; c < kWidth; ++c) dst[c] = o[rr][c];
      }
    }
    for (int d = kDimFull; d < kDim; ++d) {
      for (int rr = 0; rr < kRowTile; ++rr) {
        float o = acc[(r0 + rr) * kDim + d] * ws.alpha[r0 + rr];
        for (int n = 0; n < count; ++n) o += p[(r0 + rr) * kBlockN + n] * value_rows[n][d];
        acc[(r0 + rr) * kDim + d] = o;
      }
    }
  }
}

void run_task(const KaArgs& ka, const Task& t, Workspace& ws) {
  const long long q_len = ka.q_len(t.b);
  const int queries = static_cast<int>(std::min<long long>(kBlockM, q_len - t.i0));
  const int rows = queries * kGroup;
  const int rows_padded = (rows + kRowTile - 1) / kRowTile * kRowTile;
  const float scale = ka.scale();
  long long kv_end = 0;
  for (int qi = 0; qi < queries; ++qi) {
    const long long limit = ka.causal_limit(t.b, t.i0 + qi);
    kv_end = std::max(kv_end, limit);
    for (int g = 0; g < kGroup; ++g) {
      const int r = qi * kGroup + g;
      const ka_qkv_t* src = ka.q_row(t.b, t.i0 + qi, t.kvh * kGroup + g);
      float* dst = ws.q.data() + r * kDim;
#pragma omp simd
      for (int d = 0; d < kDim; ++d) dst[d] = ka_to_float(src[d]) * scale;
      ws.limit[r] = limit;
    }
  }
  // Padding rows (up to a whole ROW_TILE) see no key; their results are never stored.
  for (int r = rows; r < rows_padded; ++r) {
    float* dst = ws.q.data() + r * kDim;
    for (int d = 0; d < kDim; ++d) dst[d] = 0.0f;
    ws.limit[r] = 0;
  }
  for (int r = 0; r < rows_padded; ++r) {
    ws.m[r] = -INFINITY;
    ws.l[r] = 0.0f;
    float* a = ws.acc.data() + r * kDim;
    for (int d = 0; d < kDim; ++d) a[d] = 0.0f;
  }
  ws.kv_end = kv_end;
  const bool outer = QK_FORM == KA_QK_FORM_outer ||
                     (QK_FORM == KA_QK_FORM_auto && rows_padded > kAutoOuterRows);
  for (long long j0 = 0; j0 < kv_end; j0 += kBlockN) {
    const int count = static_cast<int>(std::min<long long>(kBlockN, kv_end - j0));
    if (outer) {
      stage_tile<true>(ka, t, j0, count, ws);
      tile_scores<true>(rows_padded, count, ws);
    } else {
      stage_tile<false>(ka, t, j0, count, ws);
      tile_scores<false>(rows_padded, count, ws);
    }
    tile_softmax(rows_padded, j0, count, ws);
    tile_values(rows_padded, count, ws);
  }
  for (int r = 0; r < rows; ++r) {
    const long long i = t.i0 + r / kGroup;
    const int h = t.kvh * kGroup + r % kGroup;
    ka_o_t* dst = ka.o_row(t.b, i, h);
    const float* a = ws.acc.data() + r * kDim;
    const float l = ws.l[r];
    if (l > 0.0f) {
      const float inv = 1.0f / l;
      for (int d = 0; d < kDim; ++d) dst[d] = ka_from_float<ka_o_t>(a[d] * inv);
      ka.store_lse(t.b, i, h, ws.m[r] + std::log(l));
    } else {
      for (int d = 0; d < kDim; ++d) dst[d] = ka_from_float<ka_o_t>(0.0f);
      ka.store_lse(t.b, i, h, -INFINITY);
    }
  }
}

}  // namespace

static void ka_compute(const KaArgs& ka) {
  std::vector<Task> tasks;
  long long work = 0;
  const long long batch = ka.batch();
  for (long long b = 0; b < batch; ++b) {
    const long long q_len = ka.q_len(b);
    for (long long i0 = 0; i0 < q_len; i0 += kBlockM) {
      const long long last = std::min<long long>(i0 + kBlockM, q_len) - 1;
      const long long keys = std::max<long long>(ka.causal_limit(b, last), 0);
      const long long cost = (keys + 1) * (last - i0 + 1);
      for (int kvh = 0; kvh < KA_KV_HEADS; ++kvh) tasks.push_back({b, i0, kvh, cost});
      work += cost * KA_KV_HEADS * kGroup * kDim;
    }
  }
#if SCHEDULE == KA_SCHEDULE_heavy_first
  std::stable_sort(tasks.begin(), tasks.end(),
                   [](const Task& x, const Task& y) { return x.cost > y.cost; });
#endif
  const long long count = static_cast<long long>(tasks.size());
  const int threads = ka_thread_count();
  if (threads == 1 || count < 2 || work < PARALLEL_MIN_WORK) {
    Workspace& ws = workspace();
    for (const Task& t : tasks) run_task(ka, t, ws);
    return;
  }
#pragma omp parallel num_threads(threads)
  {
    Workspace& ws = workspace();
#if SCHEDULE == KA_SCHEDULE_static
#pragma omp for schedule(static)
#else
#pragma omp for schedule(dynamic, 1)
#endif
    for (long long task = 0; task < count; ++task) run_task(ka, tasks[task], ws);
  }
}
