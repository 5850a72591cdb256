// Device building blocks of the CUDA "fused" template: the generated ka_problem.h describes each
// kernel of a plan as a struct (how to read, combine and store its elements); these drivers map
// the work onto threads. Every reduction and scan combines in a fixed order, so a result depends
// only on the sizes and the knob point, never on timing. Compiled by nvcc as C++17.
#pragma once

#include <cstdio>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include <type_traits>

#define KA_DEV __device__ __forceinline__

// ---------------------------------------------------------------------------------------------
// Packs: N elements moved in pieces of at most 16 bytes (one LDG/STG.128 each). The caller
// guarantees the alignment (the host's vector checks).

template <int BYTES>
struct ka_bits;
template <>
struct ka_bits<1> {
  typedef unsigned char type;
};
template <>
struct ka_bits<2> {
  typedef unsigned short type;
};
template <>
struct ka_bits<4> {
  typedef unsigned int type;
};
template <>
struct ka_bits<8> {
  typedef uint2 type;
};
template <>
struct ka_bits<16> {
  typedef uint4 type;
};

template <class T, int N>
struct alignas(N * sizeof(T) >= 16 ? 16 : N * sizeof(T)) ka_pack {
  T v[N];
};

template <int N, class T>
KA_DEV ka_pack<T, N> ka_load_pack(const T* p) {
  constexpr int kBytes = N * (int)sizeof(T);
  constexpr int kPiece = kBytes > 16 ? 16 : kBytes;
  typedef typename ka_bits<kPiece>::type bits_t;
  ka_pack<T, N> pack;
#pragma unroll
  for (int c = 0; c < kBytes / kPiece; ++c)
    reinterpret_cast<bits_t*>(&pack)[c] = reinterpret_cast<const bits_t*>(p)[c];
  return pack;
}

template <int N, class T>
KA_DEV void ka_store_pack(T* p, const ka_pack<T, N>& pack) {
  constexpr int kBytes = N * (int)sizeof(T);
  constexpr int kPiece = kBytes > 16 ? 16 : kBytes;
  typedef typename ka_bits<kPiece>::type bits_t;
#pragma unroll
  for (int c = 0; c < kBytes / kPiece; ++c)
    reinterpret_cast<bits_t*>(p)[c] = reinterpret_cast<const bits_t*>(&pack)[c];
}

/// Whether `p + first` suits a pack of n elements: aligned to min(16, n * sizeof(T)) bytes.
template <class T>
inline bool ka_pack_aligned(const T* p, long long first, int n) {
  const unsigned long long bytes = (unsigned long long)n * sizeof(T);
  const unsigned long long need = bytes < 16 ? bytes : 16;
  return ((unsigned long long)(p + first)) % need == 0;
}

// ---------------------------------------------------------------------------------------------
// Shuffles of the values reductions and scans carry (float, double, long long and structs of
// them: a generated accumulator shuffles field by field through these).

template <class V>
KA_DEV V ka_shfl_xor(V v, int mask, int width = 32) {
  return __shfl_xor_sync(0xffffffffu, v, mask, width);
}
template <class V>
KA_DEV V ka_shfl_up(V v, int delta) {
  return __shfl_up_sync(0xffffffffu, v, delta);
}
template <class V>
KA_DEV V ka_shfl(V v, int lane) {
  return __shfl_sync(0xffffffffu, v, lane);
}

// ---------------------------------------------------------------------------------------------
// Reductions. K (the generated kernel struct) names its accumulator type K::Acc and provides
//   template <int P> KA_DEV void combine(Acc& into, const Acc& other) const   (pass P's stages)
//   KA_DEV static Acc shfl_xor(const Acc& a, int mask, int width)
// Combining is symmetric (argmax breaks ties by index), so the butterfly below leaves the same
// bits in every lane.

template <class K, int P>
KA_DEV void ka_warp_allreduce(const K& k, typename K::Acc& acc, int width) {
  for (int mask = width / 2; mask > 0; mask >>= 1)
    k.template combine<P>(acc, K::shfl_xor(acc, mask, width));
}

/// Every thread of a block of THREADS (a power of two) ends with the block's combination.
/// `shared` holds at least THREADS / 32 + 1 accumulators.
template <class K, int P, int THREADS>
KA_DEV void ka_block_allreduce(const K& k, typename K::Acc& acc, typename K::Acc* shared) {
  ka_warp_allreduce<K, P>(k, acc, 32);
  if (THREADS <= 32) return;
  constexpr int kWarps = THREADS / 32;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();  // the previous use of `shared` is over
  if (lane == 0) shared[warp] = acc;
  __syncthreads();
  if (warp == 0) {
    typename K::Acc total = shared[lane < kWarps ? lane : 0];
    ka_warp_allreduce<K, P>(k, total, kWarps);
    if (lane == 0) shared[kWarps] = total;
  }
  __syncthreads();
  acc = shared[kWarps];
}

/// Threads (x, y) of a block of X * Y: the Y threads of one x combine, in a fixed tree over y.
/// `shared` holds X * Y accumulators.
template <class K, int P, int X, int Y>
KA_DEV void ka_column_allreduce(const K& k, typename K::Acc& acc, typename K::Acc* shared) {
  const int x = threadIdx.x % X, y = threadIdx.x / X;
  __syncthreads();
  shared[y * X + x] = acc;
  __syncthreads();
#pragma unroll
  for (int half = Y / 2; half > 0; half >>= 1) {
    if (y < half) {
      typename K::Acc mine = shared[y * X + x];
      k.template combine<P>(mine, shared[(y + half) * X + x]);
      shared[y * X + x] = mine;
    }
    __syncthreads();
  }
  acc = shared[x];
}

// Stage operators. max/min propagate NaN as torch does; argmax/argmin keep the first index of
// the extreme (NaN counts as the extreme, as in torch).
template <class V>
KA_DEV V ka_red_max(V a, V b) {
  if (a != a) return a;
  if (b != b) return b;
  return a > b ? a : b;
}
template <class V>
KA_DEV V ka_red_min(V a, V b) {
  if (a != a) return a;
  if (b != b) return b;
  return a < b ? a : b;
}
/// argmax (GREATER) / argmin: (value, index) pairs; `into` keeps the winner.
template <bool GREATER, class V>
KA_DEV void ka_red_arg(V& value, long long& index, V other_value, long long other_index) {
  const bool nan = value != value, other_nan = other_value != other_value;
  bool take;
  if (nan || other_nan) {
    take = other_nan && (!nan || other_index < index);
  } else if (GREATER ? other_value > value : other_value < value) {
    take = true;
  } else {
    take = other_value == value && other_index < index;
  }
  if (take) {
    value = other_value;
    index = other_index;
  }
}

// ---------------------------------------------------------------------------------------------
// Scans: Op::combine(earlier, later) and Op::identity() (see the generated scan structs).

template <class V>
struct ka_scan_sum {
  static KA_DEV V identity() { return V(0); }
  static KA_DEV V combine(V a, V b) { return a + b; }
};
template <class V>
struct ka_scan_prod {
  static KA_DEV V identity() { return V(1); }
  static KA_DEV V combine(V a, V b) { return a * b; }
};
template <class V>
struct ka_scan_max {
  static KA_DEV V identity() {
    if constexpr (std::is_integral<V>::value)
      return V(-9223372036854775807LL - 1);  // integer scans carry long long
    else
      return -V(INFINITY);
  }
  static KA_DEV V combine(V a, V b) { return ka_red_max(a, b); }
};
template <class V>
struct ka_scan_min {
  static KA_DEV V identity() {
    if constexpr (std::is_integral<V>::value)
      return V(9223372036854775807LL);
    else
      return V(INFINITY);
  }
  static KA_DEV V combine(V a, V b) { return ka_red_min(a, b); }
};
/// log(exp(a) + exp(b)), as torch.logcumsumexp accumulates.
template <class V>
struct ka_scan_logsumexp {
  static KA_DEV V identity() { return -V(INFINITY); }
  static KA_DEV V combine(V a, V b) {
    if (a != a || b != b) return a + b;
    const V hi = a > b ? a : b, lo = a > b ? b : a;
    if (hi == -V(INFINITY)) return hi;
    if (hi == V(INFINITY)) return hi;
    return hi + log1p(exp(lo - hi));
  }
};

/// Inclusive scan of one value per lane over the warp, lane order.
template <class Op, class V>
KA_DEV V ka_warp_inclusive_scan(V v) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int delta = 1; delta < 32; delta <<= 1) {
    const V earlier = ka_shfl_up(v, delta);
    if (lane >= delta) v = Op::combine(earlier, v);
  }
  return v;
}

// ---------------------------------------------------------------------------------------------
// Index helpers

/// Blocks for `work` items of `per_block` each, capped (the loops stride over the rest).
inline unsigned ka_blocks(long long work, long long per_block, long long cap) {
  long long blocks = (work + per_block - 1) / per_block;
  if (blocks < 1) blocks = 1;
  return (unsigned)(blocks < cap ? blocks : cap);
}

/// The streaming multiprocessors of the current device (asked once).
inline int ka_sm_count() {
  static int count = [] {
    int device = 0, sms = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess ||
        sms <= 0)
      sms = 132;
    return sms;
  }();
  return count;
}

// ---------------------------------------------------------------------------------------------
// Pointwise. K provides `long long total, inner` (elements of the domain, size of its innermost
// dimension), `template <int N, class I> KA_DEV void apply(I flat) const` (elements flat ..
// flat + N - 1 of one innermost row) and the host's `bool vector_ok(int n) const`.
// Item k of thread t handles vector base + k * THREADS + t, so a warp's accesses are contiguous.

template <class K, int N, int THREADS, int ITEMS_, class I>
__global__ void __launch_bounds__(THREADS) ka_pointwise_kernel(const K k, const I vectors) {
  const I per_block = (I)THREADS * ITEMS_;
  const I stride = (I)gridDim.x * per_block;
  for (I base = (I)blockIdx.x * per_block; base < vectors; base += stride) {
#pragma unroll
    for (int item = 0; item < ITEMS_; ++item) {
      const I v = base + (I)(item * THREADS) + (I)threadIdx.x;
      if (v < vectors) k.template apply<N, I>(v * (I)N);
    }
  }
}

template <class K, int N, int THREADS, int ITEMS_>
void ka_launch_pointwise_n(const K& k, cudaStream_t stream) {
  const long long vectors = k.total / N;
  const unsigned blocks = ka_blocks(vectors, (long long)THREADS * ITEMS_, 32LL * ka_sm_count());
  // 32-bit index arithmetic when it cannot overflow: the divisions are much cheaper.
  if (k.total + (long long)blocks * THREADS * ITEMS_ * N < (1LL << 31))
    ka_pointwise_kernel<K, N, THREADS, ITEMS_, unsigned>
        <<<blocks, THREADS, 0, stream>>>(k, (unsigned)vectors);
  else
    ka_pointwise_kernel<K, N, THREADS, ITEMS_, long long>
        <<<blocks, THREADS, 0, stream>>>(k, vectors);
}

template <class K, int VEC_, int THREADS, int ITEMS_>
void ka_launch_pointwise(const K& k, cudaStream_t stream) {
  if (k.total <= 0) return;
  if (VEC_ > 1 && k.inner % VEC_ == 0 && k.vector_ok(VEC_))
    ka_launch_pointwise_n<K, (VEC_ > 1 ? VEC_ : 1), THREADS, ITEMS_>(k, stream);
  else
    ka_launch_pointwise_n<K, 1, THREADS, ITEMS_>(k, stream);
}

// ---------------------------------------------------------------------------------------------
// Scatter. K provides `long long total` (the domain's points) and
//   KA_DEV void apply(long long flat) const;   the stores of one point
// A grid-stride loop over the domain. Accumulating stores go through ka_atomic_add, so values
// that meet at one element are added in arrival order (as torch's index_add_ on CUDA does): the
// one result of a plan that may differ from run to run in its last bits.

KA_DEV void ka_atomic_add(float* at, float v) { atomicAdd(at, v); }
KA_DEV void ka_atomic_add(double* at, double v) { atomicAdd(at, v); }
KA_DEV void ka_atomic_add(__half* at, __half v) { atomicAdd(at, v); }
KA_DEV void ka_atomic_add(__nv_bfloat16* at, __nv_bfloat16 v) { atomicAdd(at, v); }
KA_DEV void ka_atomic_add(int* at, int v) { atomicAdd(at, v); }
// Two's complement addition is the same on unsigned words.
KA_DEV void ka_atomic_add(long long* at, long long v) {
  atomicAdd(reinterpret_cast<unsigned long long*>(at), static_cast<unsigned long long>(v));
}

template <class K, int THREADS>
__global__ void __launch_bounds__(THREADS) ka_scatter_kernel(const K k) {
  const long long stride = (long long)gridDim.x * THREADS;
  for (long long flat = (long long)blockIdx.x * THREADS + threadIdx.x; flat < k.total;
       flat += stride)
    k.apply(flat);
}

template <class K, int THREADS>
void ka_launch_scatter(const K& k, cudaStream_t stream) {
  if (k.total <= 0) return;
  ka_scatter_kernel<K, THREADS>
      <<<ka_blocks(k.total, THREADS, 32LL * ka_sm_count()), THREADS, 0, stream>>>(k);
}

// ---------------------------------------------------------------------------------------------
// Topk. K provides
//   long long rows, n, k;   kept points, elements of a row, elements each row keeps
//   typedef V;              the value type; static constexpr bool kLargest;
//   KA_DEV V value(long long row, long long r) const;        element r of a row
//   KA_DEV void store(long long row, long long j, V value, long long index) const;  the j-th kept
// A block per row. Its candidates gather in shared memory (one slot per element while they
// fit); when the next tile of the row would overflow the slots, a bitonic sort orders them and
// the best k stay, the k-th becoming a bound that later elements must beat to enter. The final
// sort orders the survivors and the first k are stored. The order is total (value, then
// position, NaN above every number as torch orders it), so the result does not depend on the
// order in which threads claim slots.

constexpr int kTopkAbsent = 0x7fffffff;  // the position of an empty slot: after every element

template <bool LARGEST, class V>
KA_DEV bool ka_topk_before(V a, int at_a, V b, int at_b) {
  if (at_a == kTopkAbsent || at_b == kTopkAbsent) return at_b == kTopkAbsent && at_a != kTopkAbsent;
  const bool nan_a = a != a, nan_b = b != b;
  if (nan_a || nan_b) return nan_a && nan_b ? at_a < at_b : LARGEST == nan_a;
  if (a == b) return at_a < at_b;
  return LARGEST ? a > b : a < b;
}

/// Orders slots [0, count) of the block's candidates (the rest up to a power of two are made
/// empty first). Every thread calls it with the same count.
template <bool LARGEST, int THREADS, class V>
KA_DEV void ka_topk_sort(V* values, int* at, int count) {
  int slots = 1;
  while (slots < count) slots <<= 1;
  for (int i = count + (int)threadIdx.x; i < slots; i += THREADS) {
    values[i] = V(0);
    at[i] = kTopkAbsent;
  }
  __syncthreads();
  for (int size = 2; size <= slots; size <<= 1) {
    for (int stride = size >> 1; stride > 0; stride >>= 1) {
      for (int i = threadIdx.x; i < slots / 2; i += THREADS) {
        const int lo = 2 * i - (i & (stride - 1)), hi = lo + stride;
        const bool ascending = (lo & size) == 0;
        if (ka_topk_before<LARGEST>(values[hi], at[hi], values[lo], at[lo]) == ascending) {
          const V v = values[lo];
          values[lo] = values[hi];
          values[hi] = v;
          const int a = at[lo];
          at[lo] = at[hi];
          at[hi] = a;
        }
      }
      __syncthreads();
    }
  }
}

/// Candidate slots per block: 32 KiB of 4-byte values or 24 KiB of 8-byte ones, and at least two
/// tiles, so that k of up to SLOTS - THREADS can stream over rows of any length.
template <class V, int THREADS>
struct ka_topk_slots {
  static constexpr int kBase = sizeof(V) <= 4 ? 4096 : 2048;
  static constexpr int value = kBase > 2 * THREADS ? kBase : 2 * THREADS;
};

template <class K, int THREADS>
__global__ void __launch_bounds__(THREADS) ka_topk_kernel(const K k) {
  typedef typename K::V V;
  constexpr int SLOTS = ka_topk_slots<V, THREADS>::value;
  __shared__ V values[SLOTS];
  __shared__ int at[SLOTS];
  __shared__ int count;
  const int n = (int)k.n, keep = (int)k.k;
  for (long long row = blockIdx.x; row < k.rows; row += gridDim.x) {
    if (threadIdx.x == 0) count = 0;
    __syncthreads();
    bool bounded = false;
    V bound = V(0);
    int bound_at = kTopkAbsent;
    for (int base = 0; base < n; base += THREADS) {
      const int tile = n - base < THREADS ? n - base : THREADS;
      if (count + tile > SLOTS) {  // only when n > SLOTS, so keep <= SLOTS - THREADS (host)
        ka_topk_sort<K::kLargest, THREADS>(values, at, count);
        bounded = true;
        bound = values[keep - 1];
        bound_at = at[keep - 1];
        __syncthreads();
        if (threadIdx.x == 0) count = keep;
        __syncthreads();
      }
      const int r = base + (int)threadIdx.x;
      if (r < n) {
        const V v = k.value(row, r);
        if (!bounded || ka_topk_before<K::kLargest>(v, r, bound, bound_at)) {
          const int slot = atomicAdd(&count, 1);
          values[slot] = v;
          at[slot] = r;
        }
      }
      __syncthreads();
    }
    ka_topk_sort<K::kLargest, THREADS>(values, at, count);
    for (int j = threadIdx.x; j < keep; j += THREADS) k.store(row, j, values[j], at[j]);
    __syncthreads();
  }
}

/// nullptr, or why the rows cannot be served.
template <class K, int THREADS>
const char* ka_launch_topk(const K& k, cudaStream_t stream) {
  constexpr int SLOTS = ka_topk_slots<typename K::V, THREADS>::value;
  if (k.k < 0 || k.k > k.n) return "k is outside the row";
  if (k.n >= kTopkAbsent) return "a row has 2^31 - 1 elements or more";
  if (k.n > SLOTS && k.k > SLOTS - THREADS) {
    static thread_local char message[160];
    std::snprintf(message, sizeof(message),
                  "rows of %lld elements keep at most %d on the GPU (shared-memory candidates at "
                  "BLOCK_THREADS %d), not %lld",
                  k.n, SLOTS - THREADS, THREADS, k.k);
    return message;
  }
  if (k.rows <= 0 || k.k == 0) return nullptr;
  ka_topk_kernel<K, THREADS><<<ka_blocks(k.rows, 1, 32LL * ka_sm_count()), THREADS, 0, stream>>>(k);
  return nullptr;
}

// ---------------------------------------------------------------------------------------------
// Reduce. K provides
//   long long kept, reduced, red_inner;   kept points, reduced elements, innermost reduced size
//   struct Acc (every stage's result), struct Elem (the loads at one element)
//   static constexpr int kPasses; static constexpr bool kHasFull;
//   KA_DEV void init(Acc&) const;                          every stage at its identity
//   template <int N> KA_DEV void fetch(long long kept, long long r, Elem (&e)[N]) const;
//   template <int P> KA_DEV void add(Acc&, const Elem&, long long kept, long long r) const;
//   template <int P> KA_DEV void combine(Acc&, const Acc&) const; static shfl_xor(...)
//   KA_DEV void store_keep(const Acc&, long long kept) const;
//   template <int N> KA_DEV void store_full(const Acc&, const Elem (&)[N], long long kept,
//                                           long long r) const;
//   host: bool vector_ok(int n) const; int layout() const (1: the innermost reduced dimension
//   is contiguous or nothing is; 2: only the innermost kept dimension is).
// Stages run in passes (a pass holds stages that need no result of the same pass); each pass
// walks the reduced elements, then the group combines.

/// A warp per kept point.
struct ka_warp_group {
  long long point;
  KA_DEV bool active() const { return true; }
  KA_DEV int lane() const { return threadIdx.x % 32; }
  static constexpr int kSize = 32;
  template <class K, int P>
  KA_DEV void allreduce(const K& k, typename K::Acc& acc, typename K::Acc*) const {
    ka_warp_allreduce<K, P>(k, acc, 32);
  }
};

/// The whole block per kept point.
template <int THREADS>
struct ka_block_group {
  long long point;
  KA_DEV bool active() const { return true; }
  KA_DEV int lane() const { return threadIdx.x; }
  static constexpr int kSize = THREADS;
  template <class K, int P>
  KA_DEV void allreduce(const K& k, typename K::Acc& acc, typename K::Acc* shared) const {
    ka_block_allreduce<K, P, THREADS>(k, acc, shared);
  }
};

/// Threads (x, y): x picks the kept point (adjacent x read adjacent memory when the kept
/// dimension is the contiguous one), the Y threads of one x share its reduced elements.
template <int X, int Y>
struct ka_column_group {
  long long point;
  bool in_range;  // false: a thread past the last kept point, which only helps the block sync
  KA_DEV bool active() const { return in_range; }
  KA_DEV int lane() const { return threadIdx.x / X; }
  static constexpr int kSize = Y;
  template <class K, int P>
  KA_DEV void allreduce(const K& k, typename K::Acc& acc, typename K::Acc* shared) const {
    ka_column_allreduce<K, P, X, Y>(k, acc, shared);
  }
};

/// Pass P of one kept point over reduced vectors [first, end) with step `step` (vectors of N
/// elements), from the cache when `cached`.
template <class K, int P, int N, int CACHE>
KA_DEV void ka_reduce_walk(const K& k, typename K::Acc& acc, long long point, long long first,
                           long long end, long long step, bool cached,
                           const typename K::Elem (&cache)[CACHE][N]) {
  if (CACHE > 0 && cached) {
#pragma unroll
    for (int c = 0; c < CACHE; ++c) {
      const long long v = first + c * step;
      if (v < end) {
#pragma unroll
        for (int i = 0; i < N; ++i) k.template add<P>(acc, cache[c][i], point, v * N + i);
      }
    }
    return;
  }
  for (long long v = first; v < end; v += step) {
    typename K::Elem e[N];
    k.template fetch<N>(point, v * N, e);
#pragma unroll
    for (int i = 0; i < N; ++i) k.template add<P>(acc, e[i], point, v * N + i);
  }
}

template <class K, int P, int N, int CACHE, class Group>
struct ka_reduce_passes {
  static KA_DEV void run(const K& k, const Group& g, typename K::Acc& acc, long long vectors,
                         bool cached, const typename K::Elem (&cache)[CACHE][N],
                         typename K::Acc* shared) {
    ka_reduce_walk<K, P, N, CACHE>(k, acc, g.point, g.lane(), vectors, Group::kSize, cached, cache);
    g.template allreduce<K, P>(k, acc, shared);
    ka_reduce_passes<K, P + 1, N, CACHE, Group>::run(k, g, acc, vectors, cached, cache, shared);
  }
};
template <class K, int N, int CACHE, class Group>
struct ka_reduce_passes<K, K::kPasses, N, CACHE, Group> {
  static KA_DEV void run(const K&, const Group&, typename K::Acc&, long long, bool,
                         const typename K::Elem (&)[CACHE][N], typename K::Acc*) {}
};

/// One kept point by one group: every pass, then the keep stores (one thread) and the full
/// stores (every thread, its own elements). With CACHE > 0 and few enough elements, the loads
/// are read once into registers and every pass and the full stores use them.
template <class K, int N, int CACHE, class Group>
KA_DEV void ka_reduce_point(const K& k, const Group& g, typename K::Acc* shared) {
  constexpr int kCache = CACHE > 0 ? CACHE : 1;
  const long long vectors = k.reduced / N;
  const bool cached = CACHE > 0 && vectors <= (long long)CACHE * Group::kSize;
  typename K::Elem cache[kCache][N];
  if (CACHE > 0 && cached) {
#pragma unroll
    for (int c = 0; c < kCache; ++c) {
      const long long v = g.lane() + (long long)c * Group::kSize;
      if (v < vectors) k.template fetch<N>(g.point, v * N, cache[c]);
    }
  }
  typename K::Acc acc;
  k.init(acc);
  ka_reduce_passes<K, 0, N, kCache, Group>::run(k, g, acc, vectors, CACHE > 0 && cached, cache,
                                                shared);
  if (!g.active()) return;
  if (g.lane() == 0) k.store_keep(acc, g.point);
  if (K::kHasFull) {
    if (CACHE > 0 && cached) {
#pragma unroll
      for (int c = 0; c < kCache; ++c) {
        const long long v = g.lane() + (long long)c * Group::kSize;
        if (v < vectors) k.template store_full<N>(acc, cache[c], g.point, v * N);
      }
    } else {
      for (long long v = g.lane(); v < vectors; v += Group::kSize) {
        typename K::Elem e[N];
        k.template fetch<N>(g.point, v * N, e);
        k.template store_full<N>(acc, e, g.point, v * N);
      }
    }
  }
}

template <class K, int N, int CACHE, int THREADS>
__global__ void __launch_bounds__(THREADS) ka_reduce_warps(const K k) {
  constexpr int kWarps = THREADS / 32;
  const long long step = (long long)gridDim.x * kWarps;
  for (long long p = (long long)blockIdx.x * kWarps + threadIdx.x / 32; p < k.kept; p += step)
    ka_reduce_point<K, N, CACHE>(k, ka_warp_group{p}, nullptr);
}

template <class K, int N, int CACHE, int THREADS>
__global__ void __launch_bounds__(THREADS) ka_reduce_blocks(const K k) {
  __shared__ typename K::Acc shared[THREADS / 32 + 1];
  for (long long p = blockIdx.x; p < k.kept; p += gridDim.x)
    ka_reduce_point<K, N, CACHE>(k, ka_block_group<THREADS>{p}, shared);
}

template <class K, int THREADS>
__global__ void __launch_bounds__(THREADS) ka_reduce_columns(const K k) {
  constexpr int kX = 32, kY = THREADS / 32;
  __shared__ typename K::Acc shared[THREADS];
  const long long step = (long long)gridDim.x * kX;
  // Every thread of the block runs the same number of trips: the column reduction syncs.
  for (long long base = (long long)blockIdx.x * kX; base < k.kept; base += step) {
    const long long p = base + threadIdx.x % kX;
    ka_reduce_point<K, 1, 0>(k, ka_column_group<kX, kY>{p < k.kept ? p : k.kept - 1, p < k.kept},
                             shared);
  }
}

// Split reduction, for few kept points over many elements (a full reduction to a scalar): pass
// P runs as blocks (split s, kept point p) over chunks of the elements, each writing its
// combination to partial[p * splits + s]; then one block per kept point combines the partials
// in split order into result[p] (which the next pass reads for the earlier stages). No atomics,
// so the result does not depend on timing.
template <class K, int P, int N, int THREADS>
__global__ void __launch_bounds__(THREADS)
    ka_reduce_split_partial(const K k, long long splits, long long chunk_vectors,
                            typename K::Acc* partial, const typename K::Acc* result) {
  __shared__ typename K::Acc shared[THREADS / 32 + 1];
  const long long p = blockIdx.y, s = blockIdx.x;
  typename K::Acc acc;
  if (P == 0)
    k.init(acc);
  else
    acc = result[p];
  const long long vectors = k.reduced / N;
  const long long first = s * chunk_vectors;
  const long long end = first + chunk_vectors < vectors ? first + chunk_vectors : vectors;
  const typename K::Elem none[1][N] = {};
  ka_reduce_walk<K, P, N, 1>(k, acc, p, first + threadIdx.x, end, THREADS, false, none);
  ka_block_allreduce<K, P, THREADS>(k, acc, shared);
  if (threadIdx.x == 0) partial[p * splits + s] = acc;
}

template <class K, int P, int THREADS>
__global__ void __launch_bounds__(THREADS)
    ka_reduce_split_combine(const K k, long long splits, const typename K::Acc* partial,
                            typename K::Acc* result) {
  __shared__ typename K::Acc shared[THREADS / 32 + 1];
  const long long p = blockIdx.x;
  typename K::Acc acc;
  if (P == 0)
    k.init(acc);
  else
    acc = result[p];  // the earlier passes' results; pass P's stages still at their identities
  // Thread t combines partials t, t + THREADS, ... in order, then the fixed block tree.
  for (long long s = threadIdx.x; s < splits; s += THREADS)
    k.template combine<P>(acc, partial[p * splits + s]);
  ka_block_allreduce<K, P, THREADS>(k, acc, shared);
  if (threadIdx.x == 0) {
    result[p] = acc;
    if (P + 1 == K::kPasses) k.store_keep(acc, p);
  }
}

template <class K, int N, int THREADS>
__global__ void __launch_bounds__(THREADS)
    ka_reduce_split_full(const K k, long long chunk_vectors, const typename K::Acc* result) {
  const long long p = blockIdx.y;
  const typename K::Acc acc = result[p];
  const long long vectors = k.reduced / N;
  const long long first = blockIdx.x * chunk_vectors;
  const long long end = first + chunk_vectors < vectors ? first + chunk_vectors : vectors;
  for (long long v = first + threadIdx.x; v < end; v += THREADS) {
    typename K::Elem e[N];
    k.template fetch<N>(p, v * N, e);
    k.template store_full<N>(acc, e, p, v * N);
  }
}

template <class K, int P, int N, int THREADS>
struct ka_split_passes {
  static void run(const K& k, long long splits, long long chunk, typename K::Acc* partial,
                  typename K::Acc* result, cudaStream_t stream) {
    const dim3 grid((unsigned)splits, (unsigned)k.kept);
    ka_reduce_split_partial<K, P, N, THREADS>
        <<<grid, THREADS, 0, stream>>>(k, splits, chunk, partial, result);
    ka_reduce_split_combine<K, P, THREADS>
        <<<(unsigned)k.kept, THREADS, 0, stream>>>(k, splits, partial, result);
    ka_split_passes<K, P + 1, N, THREADS>::run(k, splits, chunk, partial, result, stream);
  }
};
template <class K, int N, int THREADS>
struct ka_split_passes<K, K::kPasses, N, THREADS> {
  static void run(const K&, long long, long long, typename K::Acc*, typename K::Acc*,
                  cudaStream_t) {}
};

/// Bytes of scratch the split path of K may use: partials of at most kMaxSplitWork blocks plus
/// one result per kept point, for kept counts up to kMaxSplitKept.
constexpr long long ka_split_max_blocks = 4096;
constexpr long long ka_split_max_kept = 1024;
template <class K>
constexpr long long ka_split_scratch_bytes() {
  return (ka_split_max_blocks + ka_split_max_kept) * (long long)sizeof(typename K::Acc) + 256;
}

template <class K, int N, int THREADS>
void ka_launch_reduce_split(const K& k, void* scratch, cudaStream_t stream) {
  const long long vectors = k.reduced / N;
  const long long target_blocks = 4LL * ka_sm_count();
  long long splits = (target_blocks + k.kept - 1) / k.kept;
  const long long by_work = vectors / (4LL * THREADS);  // at least 4 vectors per thread
  if (splits > by_work) splits = by_work;
  if (splits * k.kept > ka_split_max_blocks) splits = ka_split_max_blocks / k.kept;
  if (splits < 1) splits = 1;
  const long long chunk = (vectors + splits - 1) / splits;
  splits = (vectors + chunk - 1) / chunk;
  typename K::Acc* result = static_cast<typename K::Acc*>(scratch);
  typename K::Acc* partial = result + ka_split_max_kept;
  ka_split_passes<K, 0, N, THREADS>::run(k, splits, chunk, partial, result, stream);
  if (K::kHasFull)
    ka_reduce_split_full<K, N, THREADS>
        <<<dim3((unsigned)splits, (unsigned)k.kept), THREADS, 0, stream>>>(k, chunk, result);
}

enum { ka_row_mapping_auto = 0, ka_row_mapping_warp = 1, ka_row_mapping_block = 2 };

/// The mapping for the sizes at hand: the split path for a few kept points over many elements,
/// threads over kept points when only the kept dimension is contiguous, else a warp (short
/// rows) or a block (long rows) per kept point.
template <class K, int N, int THREADS, int CACHE, int MAPPING>
void ka_launch_reduce_n(const K& k, void* scratch, cudaStream_t stream) {
  const long long kept = k.kept, vectors = k.reduced / N;
  const bool few_points = kept * 2 <= ka_sm_count() && kept <= ka_split_max_kept;
  if (few_points && vectors >= 16LL * THREADS && scratch != nullptr) {
    ka_launch_reduce_split<K, N, THREADS>(k, scratch, stream);
    return;
  }
  const long long grid_cap = 16LL * ka_sm_count() * (1024 / THREADS);
  if (k.layout() == 2 && N == 1) {
    ka_reduce_columns<K, THREADS><<<ka_blocks(kept, 32, grid_cap), THREADS, 0, stream>>>(k);
    return;
  }
  const bool warps = MAPPING == ka_row_mapping_warp ||
                     (MAPPING == ka_row_mapping_auto && vectors <= 32LL * (CACHE > 0 ? CACHE : 2));
  if (warps)
    ka_reduce_warps<K, N, CACHE, THREADS>
        <<<ka_blocks(kept, THREADS / 32, grid_cap), THREADS, 0, stream>>>(k);
  else
    ka_reduce_blocks<K, N, CACHE, THREADS><<<ka_blocks(kept, 1, grid_cap), THREADS, 0, stream>>>(k);
}

template <class K, int VEC_, int THREADS, int CACHE, int MAPPING>
void ka_launch_reduce(const K& k, void* scratch, cudaStream_t stream) {
  if (k.kept <= 0) return;
  const bool vector = VEC_ > 1 && k.layout() == 1 && k.red_inner % VEC_ == 0 && k.vector_ok(VEC_);
  if (vector)
    ka_launch_reduce_n<K, (VEC_ > 1 ? VEC_ : 1), THREADS, CACHE, MAPPING>(k, scratch, stream);
  else
    ka_launch_reduce_n<K, 1, THREADS, CACHE, MAPPING>(k, scratch, stream);
}

// ---------------------------------------------------------------------------------------------
// Scan. K provides `long long lines, length` (lines, and elements per line along the axis),
// `typedef ... V; typedef ka_scan_<op><V> Op; static constexpr bool kReverse, kExclusive;`,
// `KA_DEV V value(long long line, long long j) const` (the element at position j of the axis),
// `KA_DEV void store(long long line, long long j, V scan) const` and the host's
// `int layout() const` (2 when neighbouring lines are neighbours in memory, so a thread per line
// reads coalesced). Position t of the walk is j = t, or length - 1 - t in reverse.

template <class K>
KA_DEV long long ka_scan_position(const K& k, long long t) {
  return K::kReverse ? k.length - 1 - t : t;
}

/// A thread per line, sequential.
template <class K, int THREADS>
__global__ void __launch_bounds__(THREADS) ka_scan_threads(const K k) {
  typedef typename K::V V;
  const long long step = (long long)gridDim.x * THREADS;
  for (long long line = (long long)blockIdx.x * THREADS + threadIdx.x; line < k.lines;
       line += step) {
    V carry = K::Op::identity();
    for (long long t = 0; t < k.length; ++t) {
      const long long j = ka_scan_position(k, t);
      const V inclusive = K::Op::combine(carry, k.value(line, j));
      k.store(line, j, K::kExclusive ? carry : inclusive);
      carry = inclusive;
    }
  }
}

/// A warp per line, 32 elements at a time: a shuffle scan of the chunk, then the carry.
template <class K, int THREADS>
__global__ void __launch_bounds__(THREADS) ka_scan_warps(const K k) {
  typedef typename K::V V;
  constexpr int kWarps = THREADS / 32;
  const int lane = threadIdx.x % 32;
  const long long step = (long long)gridDim.x * kWarps;
  for (long long line = (long long)blockIdx.x * kWarps + threadIdx.x / 32; line < k.lines;
       line += step) {
    V carry = K::Op::identity();
    for (long long base = 0; base < k.length; base += 32) {
      const long long t = base + lane;
      const long long j = ka_scan_position(k, t);
      const V v = t < k.length ? k.value(line, j) : K::Op::identity();
      const V inclusive = ka_warp_inclusive_scan<typename K::Op>(v);
      const V before = ka_shfl_up(inclusive, 1);
      if (t < k.length) {
        const V scan = K::kExclusive ? (lane == 0 ? carry : K::Op::combine(carry, before))
                                     : K::Op::combine(carry, inclusive);
        k.store(line, j, scan);
      }
      carry = K::Op::combine(carry, ka_shfl(inclusive, 31));
    }
  }
}

/// A block per line, THREADS elements at a time: warp scans, a scan of the warp totals, carry.
template <class K, int THREADS>
__global__ void __launch_bounds__(THREADS) ka_scan_blocks(const K k) {
  typedef typename K::V V;
  constexpr int kWarps = THREADS / 32;
  __shared__ V warp_totals[kWarps];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (long long line = blockIdx.x; line < k.lines; line += gridDim.x) {
    V carry = K::Op::identity();
    for (long long base = 0; base < k.length; base += THREADS) {
      const long long t = base + threadIdx.x;
      const long long j = ka_scan_position(k, t);
      const V v = t < k.length ? k.value(line, j) : K::Op::identity();
      const V inclusive = ka_warp_inclusive_scan<typename K::Op>(v);
      const V before = ka_shfl_up(inclusive, 1);
      __syncthreads();  // the previous chunk's totals are read
      if (lane == 31) warp_totals[warp] = inclusive;
      __syncthreads();
      // What precedes this warp in the chunk, combined in warp order.
      V prefix = carry;
      for (int w = 0; w < warp; ++w) prefix = K::Op::combine(prefix, warp_totals[w]);
      if (t < k.length) {
        const V scan = K::kExclusive ? (lane == 0 ? prefix : K::Op::combine(prefix, before))
                                     : K::Op::combine(prefix, inclusive);
        k.store(line, j, scan);
      }
      for (int w = 0; w < kWarps; ++w) carry = K::Op::combine(carry, warp_totals[w]);
    }
  }
}

template <class K, int THREADS>
void ka_launch_scan(const K& k, cudaStream_t stream) {
  if (k.lines <= 0 || k.length <= 0) return;
  const long long cap = 16LL * ka_sm_count() * (1024 / THREADS);
  const long long resident_threads = 2048LL * ka_sm_count();
  if (k.layout() == 2 || k.length <= 16 || (k.lines >= resident_threads && k.length <= 64))
    ka_scan_threads<K, THREADS><<<ka_blocks(k.lines, THREADS, cap), THREADS, 0, stream>>>(k);
  else if (k.length <= 4096 || k.lines >= 4LL * ka_sm_count())
    ka_scan_warps<K, THREADS><<<ka_blocks(k.lines, THREADS / 32, cap), THREADS, 0, stream>>>(k);
  else
    ka_scan_blocks<K, THREADS><<<ka_blocks(k.lines, 1, cap), THREADS, 0, stream>>>(k);
}

// ---------------------------------------------------------------------------------------------
// Matmul. K provides `long long batches, m, n, k` and
//   typedef ... F;  the accumulator (float, double in float64 plans)
//   KA_DEV F a(long long batch, long long m, long long k) const;   (converted elements)
//   KA_DEV F b(long long batch, long long k, long long n) const;
//   KA_DEV void store(long long batch, long long m, long long n, F acc) const;   (the epilogue)
//   bool b_k_fastest (set on the host: B's k stride is 1, so its tiles are read along k)
// and for the tensor-core path (kMma: A and B both bfloat16 or both float16)
//   typedef ... T; static constexpr bool kMma;
//   KA_DEV const T* a_row(long long batch, long long m) const;   A[batch, m, 0], k stride 1
//   KA_DEV const T* b_col(long long batch, long long n) const;   B[batch, 0, n], k stride 1
//   host: bool mma_ok() const (k strides 1, rows 16-byte aligned, k % 8 == 0)

/// Tiles TM x TN over k steps of TK in shared memory; each thread accumulates RM x RN outputs
/// at rows ty + i * (TM / RM), columns tx + j * (TN / RN) (a warp's stores are contiguous).
template <class K, int TM, int TN, int TK, int RM, int RN>
__global__ void __launch_bounds__((TM / RM) * (TN / RN)) ka_matmul_fma(const K k) {
  typedef typename K::F F;
  constexpr int kTx = TN / RN, kTy = TM / RM, kThreads = kTx * kTy;
  __shared__ F as[TK][TM + 1];
  __shared__ F bs[TK][TN + 1];
  const int tx = threadIdx.x % kTx, ty = threadIdx.x / kTx;
  const long long m0 = (long long)blockIdx.y * TM, n0 = (long long)blockIdx.x * TN;
  const bool b_along_k = k.b_k_fastest;  // B is k-contiguous: read its tile along k
  for (long long batch = blockIdx.z; batch < k.batches; batch += gridDim.z) {
    F acc[RM][RN];
#pragma unroll
    for (int i = 0; i < RM; ++i)
#pragma unroll
      for (int j = 0; j < RN; ++j) acc[i][j] = F(0);
    for (long long k0 = 0; k0 < k.k; k0 += TK) {
      __syncthreads();
      for (int e = threadIdx.x; e < TM * TK; e += kThreads) {
        const int kk = e % TK, mm = e / TK;  // k fastest: A is usually k-contiguous
        const long long m = m0 + mm, kx = k0 + kk;
        as[kk][mm] = (m < k.m && kx < k.k) ? k.a(batch, m, kx) : F(0);
      }
      for (int e = threadIdx.x; e < TN * TK; e += kThreads) {
        const int kk = b_along_k ? e % TK : e / TN, nn = b_along_k ? e / TK : e % TN;
        const long long n = n0 + nn, kx = k0 + kk;
        bs[kk][nn] = (n < k.n && kx < k.k) ? k.b(batch, kx, n) : F(0);
      }
      __syncthreads();
#pragma unroll
      for (int kk = 0; kk < TK; ++kk) {
        F av[RM], bv[RN];
#pragma unroll
        for (int i = 0; i < RM; ++i) av[i] = as[kk][ty + i * kTy];
#pragma unroll
        for (int j = 0; j < RN; ++j) bv[j] = bs[kk][tx + j * kTx];
#pragma unroll
        for (int i = 0; i < RM; ++i)
#pragma unroll
          for (int j = 0; j < RN; ++j) acc[i][j] = fma(av[i], bv[j], acc[i][j]);
      }
    }
#pragma unroll
    for (int i = 0; i < RM; ++i) {
      const long long m = m0 + ty + i * kTy;
#pragma unroll
      for (int j = 0; j < RN; ++j) {
        const long long n = n0 + tx + j * kTx;
        if (m < k.m && n < k.n) k.store(batch, m, n, acc[i][j]);
      }
    }
  }
}

// Tensor cores: mma.sync m16n8k16 (bfloat16 or float16 in, float32 accumulation), block tile
// 128 x 128 x 32 over 8 warps (2 x 4, each 64 x 32), tiles staged by cp.async in two buffers.
// Shared rows are 40 elements (80 bytes) apart, so ldmatrix reads are free of bank conflicts.
namespace ka_mma {
constexpr int kBm = 128, kBn = 128, kBk = 32, kStride = kBk + 8, kThreads = 256;

KA_DEV unsigned smem_address(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
KA_DEV void copy16(void* dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_address(dst)), "l"(src),
               "r"(valid ? 16 : 0));
}
KA_DEV void ldmatrix_x4(unsigned (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_address(p)));
}
template <class T>
KA_DEV void mma(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  if constexpr (sizeof(T) == 2 && std::is_same<T, __half>::value) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}
}  // namespace ka_mma

template <class K>
__global__ void __launch_bounds__(ka_mma::kThreads) ka_matmul_mma(const K k) {
  using namespace ka_mma;
  typedef typename K::T T;
  __shared__ __align__(16) T as[2][kBm][kStride];
  __shared__ __align__(16) T bs[2][kBn][kStride];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int warp_m = warp / 4, warp_n = warp % 4;  // 64-row by 32-column warp tiles
  const long long m0 = (long long)blockIdx.y * kBm, n0 = (long long)blockIdx.x * kBn;
  for (long long batch = blockIdx.z; batch < k.batches; batch += gridDim.z) {
    // Each thread stages two 16-byte chunks of A and two of B per k tile.
    const T* a_src[2];
    const T* b_src[2];
    bool a_in[2], b_in[2];
    int row_of[2], chunk_of[2];
#pragma unroll
    for (int c = 0; c < 2; ++c) {
      const int e = threadIdx.x + c * kThreads;  // 512 chunks: 128 rows x 4 chunks of 8
      row_of[c] = e / 4;
      chunk_of[c] = (e % 4) * 8;
      const long long m = m0 + row_of[c], n = n0 + row_of[c];
      a_in[c] = m < k.m;
      b_in[c] = n < k.n;
      a_src[c] = k.a_row(batch, a_in[c] ? m : 0) + chunk_of[c];
      b_src[c] = k.b_col(batch, b_in[c] ? n : 0) + chunk_of[c];
    }
    auto stage = [&](int buffer, long long k0) {
#pragma unroll
      for (int c = 0; c < 2; ++c) {
        const bool k_in = k0 + chunk_of[c] < k.k;
        copy16(&as[buffer][row_of[c]][chunk_of[c]], a_src[c] + (k_in ? k0 : 0), a_in[c] && k_in);
        copy16(&bs[buffer][row_of[c]][chunk_of[c]], b_src[c] + (k_in ? k0 : 0), b_in[c] && k_in);
      }
      asm volatile("cp.async.commit_group;\n" ::);
    };
    float acc[4][4][4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int j = 0; j < 4; ++j)
#pragma unroll
        for (int r = 0; r < 4; ++r) acc[i][j][r] = 0.0f;
    const long long tiles = (k.k + kBk - 1) / kBk;
    __syncthreads();  // the previous batch's reads of the buffers are over
    stage(0, 0);
    for (long long t = 0; t < tiles; ++t) {
      const int buffer = t & 1;
      if (t + 1 < tiles) {
        stage(buffer ^ 1, (t + 1) * kBk);
        asm volatile("cp.async.wait_group 1;\n" ::);
      } else {
        asm volatile("cp.async.wait_group 0;\n" ::);
      }
      __syncthreads();
#pragma unroll
      for (int kk = 0; kk < kBk; kk += 16) {
        unsigned a_frag[4][4], b_frag[2][4];
#pragma unroll
        for (int i = 0; i < 4; ++i)
          ldmatrix_x4(a_frag[i],
                      &as[buffer][warp_m * 64 + i * 16 + lane % 16][kk + (lane / 16) * 8]);
#pragma unroll
        for (int j = 0; j < 2; ++j)
          ldmatrix_x4(b_frag[j], &bs[buffer][warp_n * 32 + j * 16 + (lane % 8) + (lane / 16) * 8]
                                    [kk + ((lane / 8) % 2) * 8]);
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
          for (int j = 0; j < 4; ++j)
            mma<T>(acc[i][j], a_frag[i], b_frag[j / 2][(j % 2) * 2],
                   b_frag[j / 2][(j % 2) * 2 + 1]);
      }
      __syncthreads();  // the buffer is refilled next iteration
    }
#pragma unroll
    for (int i = 0; i < 4; ++i) {
#pragma unroll
      for (int j = 0; j < 4; ++j) {
#pragma unroll
        for (int r = 0; r < 4; ++r) {
          const long long m = m0 + warp_m * 64 + i * 16 + lane / 4 + (r / 2) * 8;
          const long long n = n0 + warp_n * 32 + j * 8 + (lane % 4) * 2 + r % 2;
          if (m < k.m && n < k.n) k.store(batch, m, n, acc[i][j][r]);
        }
      }
    }
  }
}

template <class K, int TM, int TN, int TK, int RM, int RN, bool USE_MMA>
void ka_launch_matmul(const K& k, cudaStream_t stream) {
  if (k.batches <= 0 || k.m <= 0 || k.n <= 0) return;
  const unsigned z = (unsigned)(k.batches < 65535 ? k.batches : 65535);
  if constexpr (K::kMma && USE_MMA) {
    if (k.mma_ok()) {
      const dim3 grid((unsigned)((k.n + ka_mma::kBn - 1) / ka_mma::kBn),
                      (unsigned)((k.m + ka_mma::kBm - 1) / ka_mma::kBm), z);
      ka_matmul_mma<K><<<grid, ka_mma::kThreads, 0, stream>>>(k);
      return;
    }
  }
  const dim3 grid((unsigned)((k.n + TN - 1) / TN), (unsigned)((k.m + TM - 1) / TM), z);
  ka_matmul_fma<K, TM, TN, TK, RM, RN><<<grid, (TM / RM) * (TN / RN), 0, stream>>>(k);
}
