// RMSNorm, LayerNorm, softmax and logsumexp over the last axis on the CPU, with the fused
// prologue of the binding. Rows are spread over OpenMP threads in tasks of ROWS_PER_TASK rows;
// inside a row, SIMD_WIDTH columns are handled per step with one float32 accumulator per lane,
// which the compiler turns into vector code (-march=native), and a scalar tail.
//
// CACHE_ROW: the first pass writes the prologue values of the row into a per-thread float
// buffer that the later passes read (the row is evaluated once; it stays in L1/L2). Without it
// every pass evaluates the prologue from the inputs again (no extra copy; better for one plain
// float32 input).
#include <cmath>
#include <type_traits>
#include <vector>

#include "ka_cpu_entry.h"

namespace {

constexpr int kWidth = SIMD_WIDTH;

/// e[i] = exp(v[i] - shift), vectorised.
template <int N>
inline void shifted_exp(const float (&v)[N], float shift, float (&e)[N]) {
#pragma omp simd
  for (int i = 0; i < N; ++i) e[i] = ka_exp(v[i] - shift);
}

/// A row's prologue values: from the per-thread buffer, or evaluated again from the inputs.
struct RowValues {
  const KaArgs& ka;
  long long row;
  const float* cache;

  template <int N>
  void get(long long col, float (&v)[N]) const {
#if CACHE_ROW
    for (int i = 0; i < N; ++i) v[i] = cache[col + i];
#else
    ka.load_row<N>(row, col, v);
#endif
  }
};

/// Calls visit(col, v) for packs of kWidth columns, then for single columns.
template <typename Visit>
inline void over_row(const RowValues& values, long long cols, Visit visit) {
  long long col = 0;
  for (; col + kWidth <= cols; col += kWidth) {
    float v[kWidth];
    values.get<kWidth>(col, v);
    visit(col, v);
  }
  for (; col < cols; ++col) {
    float v[1];
    values.get<1>(col, v);
    visit(col, v);
  }
}

template <typename T>
constexpr int width_of = std::extent_v<std::remove_reference_t<T>>;

/// Lane accumulators folded at the end: the loop over a pack stays free of dependencies.
struct Lanes {
  float lane[kWidth];
  explicit Lanes(float init) {
    for (float& l : lane) l = init;
  }
  float sum() const {
    float total = 0.0f;
    for (float l : lane) total += l;
    return total;
  }
  float max() const {
    float total = lane[0];
    for (float l : lane) total = ka_max(total, l);
    return total;
  }
};

/// The first pass: evaluates the prologue (writing it out and into the cache when asked) and
/// hands each pack to `visit`.
template <typename Visit>
inline void first_pass(const KaArgs& ka, long long row, float* cache, Visit visit) {
  const long long cols = ka.cols();
  const auto step = [&](long long col, auto& v) {
    constexpr int n = width_of<decltype(v)>;
    ka.load_row<n>(row, col, v);
    ka.store_prologue<n>(row, col, v);
#if CACHE_ROW
    for (int i = 0; i < n; ++i) cache[col + i] = v[i];
#else
    (void)cache;
#endif
    visit(col, v);
  };
  long long col = 0;
  for (; col + kWidth <= cols; col += kWidth) {
    float v[kWidth];
    step(col, v);
  }
  for (; col < cols; ++col) {
    float v[1];
    step(col, v);
  }
}

void process_row(const KaArgs& ka, long long row, float* cache) {
  const long long cols = ka.cols();
  const RowValues values{ka, row, cache};
#if KA_OP_RMSNORM || KA_OP_LAYERNORM
  const float inv_cols = 1.0f / static_cast<float>(cols);
  Lanes first(0.0f);
  // LayerNorm sums x minus the row's first value: a row offset far from its spread (which the
  // oracle draws) would lose the mean's low bits in a float sum of x itself.
  float shift = 0.0f;
  first_pass(ka, row, cache, [&](long long col, auto& v) {
    if (KA_OP_LAYERNORM && col == 0) shift = v[0];
#pragma omp simd
    for (int i = 0; i < width_of<decltype(v)>; ++i)
      first.lane[i] += KA_OP_RMSNORM ? v[i] * v[i] : v[i] - shift;
  });
#if KA_OP_LAYERNORM
  const float shifted_mean = first.sum() * inv_cols;  // the mean minus shift
  Lanes deviations(0.0f);
  over_row(values, cols, [&](long long, auto& v) {
#pragma omp simd
    for (int i = 0; i < width_of<decltype(v)>; ++i) {
      const float d = v[i] - shift - shifted_mean;
      deviations.lane[i] += d * d;
    }
  });
  const float rstd = 1.0f / std::sqrt(deviations.sum() * inv_cols + KA_EPS);
#else
  const float rstd = 1.0f / std::sqrt(first.sum() * inv_cols + KA_EPS);
#endif
  over_row(values, cols, [&](long long col, auto& v) {
    constexpr int n = width_of<decltype(v)>;
    float w[n], b[n], y[n];
    ka.load_weight<n>(col, w);
    ka.load_bias<n>(col, b);
#pragma omp simd
    for (int i = 0; i < n; ++i) {
#if KA_OP_LAYERNORM
      y[i] = (v[i] - shift - shifted_mean) * rstd * w[i] + b[i];
#else
      y[i] = v[i] * rstd * w[i];
#endif
    }
    ka.store_row<n>(row, col, y);
  });
#else
  Lanes maxima(-INFINITY);
  first_pass(ka, row, cache, [&](long long, auto& v) {
#pragma omp simd
    for (int i = 0; i < width_of<decltype(v)>; ++i) maxima.lane[i] = ka_max(maxima.lane[i], v[i]);
  });
  const float max_value = maxima.max();
  // A row of -inf sums exp(-inf) = 0 (torch.logsumexp), not exp(-inf - -inf) = NaN.
  const float shift = max_value == -INFINITY ? 0.0f : max_value;
  Lanes sums(0.0f);
  over_row(values, cols, [&](long long, auto& v) {
    constexpr int n = width_of<decltype(v)>;
    float e[n];
    shifted_exp(v, shift, e);
    for (int i = 0; i < n; ++i) sums.lane[i] += e[i];
  });
  const float sum = sums.sum();
#if KA_OP_SOFTMAX
  const float inv_sum = 1.0f / sum;
  over_row(values, cols, [&](long long col, auto& v) {
    constexpr int n = width_of<decltype(v)>;
    float y[n];
    shifted_exp(v, shift, y);
    for (int i = 0; i < n; ++i) y[i] *= inv_sum;
    ka.store_row<n>(row, col, y);
  });
#else
  ka.store_row_value(row, max_value + std::log(sum));
#endif
#endif
}

void process_rows(const KaArgs& ka, long long begin, long long end, std::vector<float>& cache) {
#if CACHE_ROW
  cache.resize(static_cast<size_t>(ka.cols()));
#endif
  for (long long row = begin; row < end; ++row) process_row(ka, row, cache.data());
}

}  // namespace

static void ka_compute(const KaArgs& ka) {
  const long long rows = ka.rows();
  // Waking the OpenMP workers costs tens of microseconds: small problems stay on one thread.
  if (rows < 2 || rows * ka.cols() < PARALLEL_MIN_ELEMS) {
    std::vector<float> cache;
    process_rows(ka, 0, rows, cache);
    return;
  }
  const int threads = ka_thread_count();
  const long long tasks = (rows + ROWS_PER_TASK - 1) / ROWS_PER_TASK;
#pragma omp parallel num_threads(threads)
  {
    std::vector<float> cache;
#pragma omp for schedule(dynamic, 1)
    for (long long task = 0; task < tasks; ++task) {
      const long long begin = task * ROWS_PER_TASK;
      process_rows(ka, begin, begin + ROWS_PER_TASK < rows ? begin + ROWS_PER_TASK : rows, cache);
    }
  }
}
