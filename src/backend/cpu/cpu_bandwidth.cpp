#include "backend/cpu/cpu_bandwidth.h"

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <thread>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <fmt/format.h>

#include "core/error.h"
#include "core/text.h"

namespace kernelarc {
namespace {

using Clock = std::chrono::steady_clock;

struct FreeDeleter {
  void operator()(void* pointer) const { std::free(pointer); }
};

// The sums go here so that the compiler cannot drop the loads.
std::atomic<uint64_t> sink{0};

using V16 = uint64_t __attribute__((vector_size(16)));

template <typename V>
void read_sum(const char* src, std::size_t bytes) {
  const V* in = reinterpret_cast<const V*>(src);
  V a{}, b{}, c{}, d{};
  const std::size_t n = bytes / sizeof(V) / 4 * 4;
  for (std::size_t i = 0; i < n; i += 4) {
    a += in[i];
    b += in[i + 1];
    c += in[i + 2];
    d += in[i + 3];
  }
  const V total = a + b + c + d;
  sink.fetch_add(total[0], std::memory_order_relaxed);
}

template <typename V>
void write_fill(char* dst, std::size_t bytes) {
  V* out = reinterpret_cast<V*>(dst);
  const V value{1};
  for (std::size_t i = 0; i < bytes / sizeof(V); ++i) out[i] = value;
}

template <typename V>
void copy_loop(const char* src, char* dst, std::size_t bytes) {
  const V* in = reinterpret_cast<const V*>(src);
  V* out = reinterpret_cast<V*>(dst);
  for (std::size_t i = 0; i < bytes / sizeof(V); ++i) out[i] = in[i];
}

#if defined(__x86_64__)
// Non-temporal stores skip the read-for-ownership of each line a regular store pays.
void stream_fill_16(char* dst, std::size_t bytes) {
  const __m128i value = _mm_set1_epi32(1);
  for (std::size_t i = 0; i < bytes; i += 16)
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i), value);
  _mm_sfence();
}

__attribute__((target("avx"))) void stream_fill_32(char* dst, std::size_t bytes) {
  const __m256i value = _mm256_set1_epi32(1);
  for (std::size_t i = 0; i < bytes; i += 32)
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + i), value);
  _mm_sfence();
}

__attribute__((target("avx"))) void stream_copy_32(const char* src, char* dst, std::size_t bytes) {
  for (std::size_t i = 0; i < bytes; i += 32)
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + i),
                        _mm256_load_si256(reinterpret_cast<const __m256i*>(src + i)));
  _mm_sfence();
}

__attribute__((target("avx2"))) void read_sum_avx2(const char* src, std::size_t bytes) {
  const __m256i* in = reinterpret_cast<const __m256i*>(src);
  __m256i a = _mm256_setzero_si256(), b = a, c = a, d = a;
  const std::size_t n = bytes / 32 / 4 * 4;
  for (std::size_t i = 0; i < n; i += 4) {
    a = _mm256_add_epi64(a, _mm256_load_si256(in + i));
    b = _mm256_add_epi64(b, _mm256_load_si256(in + i + 1));
    c = _mm256_add_epi64(c, _mm256_load_si256(in + i + 2));
    d = _mm256_add_epi64(d, _mm256_load_si256(in + i + 3));
  }
  const __m256i total = _mm256_add_epi64(_mm256_add_epi64(a, b), _mm256_add_epi64(c, d));
  sink.fetch_add(static_cast<uint64_t>(_mm256_extract_epi64(total, 0)), std::memory_order_relaxed);
}
#endif

struct Method {
  std::string name;
  double traffic;  ///< bytes moved per buffer byte: 1 (read or write only) or 2 (copy)
  std::function<void(const char*, char*, std::size_t)> run;
};

std::vector<Method> methods() {
  std::vector<Method> all{
      {"read-only sum, 16-byte vectors", 1,
       [](const char* s, char*, std::size_t n) { read_sum<V16>(s, n); }},
      {"write-only fill, 16-byte vectors", 1,
       [](const char*, char* d, std::size_t n) { write_fill<V16>(d, n); }},
      {"read+write copy loop, 16-byte vectors", 2,
       [](const char* s, char* d, std::size_t n) { copy_loop<V16>(s, d, n); }},
      {"memcpy", 2, [](const char* s, char* d, std::size_t n) { std::memcpy(d, s, n); }},
  };
#if defined(__x86_64__)
  all.push_back({"write-only non-temporal fill, 16-byte vectors", 1,
                 [](const char*, char* d, std::size_t n) { stream_fill_16(d, n); }});
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx")) {
    all.push_back({"write-only non-temporal fill, 32-byte vectors", 1,
                   [](const char*, char* d, std::size_t n) { stream_fill_32(d, n); }});
    all.push_back({"read+write non-temporal copy, 32-byte vectors", 2,
                   [](const char* s, char* d, std::size_t n) { stream_copy_32(s, d, n); }});
  }
  if (__builtin_cpu_supports("avx2"))
    all.push_back({"read-only sum, 32-byte vectors", 1,
                   [](const char* s, char*, std::size_t n) { read_sum_avx2(s, n); }});
#endif
  return all;
}

}  // namespace

std::vector<double> time_parallel(int threads, int repetitions,
                                  const std::function<void(int)>& body) {
  // Each worker reads the clock around its own share. A coordinating thread that read it after
  // the starting barrier could be scheduled late on a busy machine, after the workers had done
  // most of the pass: a 2-core VM running a build reported 10.7 TB/s that way.
  const auto slots = static_cast<std::size_t>(threads) * static_cast<std::size_t>(repetitions);
  std::vector<Clock::time_point> starts(slots), ends(slots);
  {
    std::barrier sync(threads);
    std::vector<std::jthread> workers;
    for (int t = 0; t < threads; ++t) {
      workers.emplace_back([&, t] {
        for (int r = 0; r < repetitions; ++r) {
          const std::size_t slot = static_cast<std::size_t>(r * threads + t);
          sync.arrive_and_wait();
          starts[slot] = Clock::now();
          body(t);
          ends[slot] = Clock::now();
        }
      });
    }
  }
  std::vector<double> seconds;
  for (int r = 0; r < repetitions; ++r) {
    const auto first = starts.begin() + r * threads, last = ends.begin() + r * threads;
    const Clock::time_point start = *std::min_element(first, first + threads);
    const Clock::time_point end = *std::max_element(last, last + threads);
    seconds.push_back(std::chrono::duration<double>(end - start).count());
  }
  return seconds;
}

CpuBandwidth measure_cpu_bandwidth(int threads, int64_t llc_bytes) {
  constexpr std::size_t kHugePage = std::size_t{2} << 20;
  constexpr std::size_t kMin = std::size_t{64} << 20;
  constexpr std::size_t kMax = std::size_t{1} << 30;
  // Twice the LLC per buffer, so that no pass finds the last one's data in cache.
  const std::size_t bytes =
      std::clamp(2 * static_cast<std::size_t>(std::max<int64_t>(llc_bytes, 0)), kMin, kMax) /
      kHugePage * kHugePage;
  auto allocate = [&] {
    std::unique_ptr<char, FreeDeleter> buffer(
        static_cast<char*>(std::aligned_alloc(kHugePage, bytes)));
    if (!buffer) throw InternalError(fmt::format("calibrate cpu: cannot allocate {} bytes", bytes));
    // Huge pages make the first touch below several times faster; a refusal is harmless.
    madvise(buffer.get(), bytes, MADV_HUGEPAGE);
    return buffer;
  };
  auto src = allocate();
  auto dst = allocate();
  CpuBandwidth result;
  result.buffer_bytes = bytes;

  std::vector<int> thread_counts{threads};
  if (threads > 1) thread_counts.push_back(1);
  for (const int count : thread_counts) {
    auto slice = [&](int t) {
      const std::size_t begin = bytes * t / count / 64 * 64;
      const std::size_t end = t + 1 == count ? bytes : bytes * (t + 1) / count / 64 * 64;
      return std::pair{begin, (end - begin) / 64 * 64};
    };
    // First touch by the thread that streams the slice: faults the pages outside the timed runs
    // and places them on that thread's memory node.
    time_parallel(count, 1, [&](int t) {
      auto [begin, size] = slice(t);
      std::memset(src.get() + begin, 1, size);
      std::memset(dst.get() + begin, 0, size);
    });
    for (const Method& method : methods()) {
      auto seconds = time_parallel(count, 4, [&](int t) {
        auto [begin, size] = slice(t);
        method.run(src.get() + begin, dst.get() + begin, size);
      });
      seconds.erase(seconds.begin());  // warm-up
      const double gbs = method.traffic * static_cast<double>(bytes) / median(seconds) / 1e9;
      result.methods.push_back(
          {fmt::format("{}, {} thread{}", method.name, count, count == 1 ? "" : "s"), gbs});
      if (gbs > result.best.gbs) result.best = result.methods.back();
    }
  }
  return result;
}

}  // namespace kernelarc
