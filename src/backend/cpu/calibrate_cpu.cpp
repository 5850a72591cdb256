// CPU calibration, the calibration's JSON form and its storage in the workspace.
#include "backend/calibrate.h"

#include <sched.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <functional>
#include <thread>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <fmt/format.h>

#include "backend/cpu/cpu_bandwidth.h"
#include "backend/cpu/cpu_cache.h"
#include "core/error.h"
#include "core/text.h"

namespace kernelarc {
namespace {

int usable_cores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0 || line.rfind("Model", 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos) {
        auto value = line.substr(colon + 1);
        value.erase(0, value.find_first_not_of(" \t"));
        if (!value.empty()) return value;
      }
    }
  }
  return "unknown CPU";
}

int64_t cache_bytes(int name) {
  long value = sysconf(name);
  return value > 0 ? value : 0;
}

constexpr int kChains = 12;  // independent FMA chains: enough to cover latency x ports

struct FmaPath {
  const char* isa;
  int lanes;
  float (*run)(int64_t iterations);
};

// The chains converge to add / (1 - mul) = 1, so values stay normal whatever the length.
float fma_generic(int64_t iterations) {
  using V4 = float __attribute__((vector_size(16)));
  V4 acc[kChains];
  const V4 mul = {0.999999f, 0.999999f, 0.999999f, 0.999999f};
  const V4 add = {1e-6f, 1e-6f, 1e-6f, 1e-6f};
#pragma GCC unroll 12
  for (int k = 0; k < kChains; ++k) acc[k] = V4{1, 2, 3, 4} + static_cast<float>(k);
  for (int64_t i = 0; i < iterations; ++i) {
#pragma GCC unroll 12
    for (int k = 0; k < kChains; ++k) acc[k] = acc[k] * mul + add;
  }
  float sum = 0;
  for (int k = 0; k < kChains; ++k) sum += acc[k][0] + acc[k][1] + acc[k][2] + acc[k][3];
  return sum;
}

#if defined(__x86_64__)
__attribute__((target("avx2,fma"))) float fma_avx2(int64_t iterations) {
  __m256 acc[kChains];
  const __m256 mul = _mm256_set1_ps(0.999999f);
  const __m256 add = _mm256_set1_ps(1e-6f);
#pragma GCC unroll 12
  for (int k = 0; k < kChains; ++k) acc[k] = _mm256_set1_ps(1.0f + static_cast<float>(k));
  for (int64_t i = 0; i < iterations; ++i) {
#pragma GCC unroll 12
    for (int k = 0; k < kChains; ++k) acc[k] = _mm256_fmadd_ps(acc[k], mul, add);
  }
  __m256 sum = acc[0];
  for (int k = 1; k < kChains; ++k) sum = _mm256_add_ps(sum, acc[k]);
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, sum);
  float total = 0;
  for (float lane : lanes) total += lane;
  return total;
}

__attribute__((target("avx512f"))) float fma_avx512(int64_t iterations) {
  __m512 acc[kChains];
  const __m512 mul = _mm512_set1_ps(0.999999f);
  const __m512 add = _mm512_set1_ps(1e-6f);
#pragma GCC unroll 12
  for (int k = 0; k < kChains; ++k) acc[k] = _mm512_set1_ps(1.0f + static_cast<float>(k));
  for (int64_t i = 0; i < iterations; ++i) {
#pragma GCC unroll 12
    for (int k = 0; k < kChains; ++k) acc[k] = _mm512_fmadd_ps(acc[k], mul, add);
  }
  __m512 sum = acc[0];
  for (int k = 1; k < kChains; ++k) sum = _mm512_add_ps(sum, acc[k]);
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, sum);
  float total = 0;
  for (float lane : lanes) total += lane;
  return total;
}
#endif

FmaPath best_fma_path() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return {"avx512f", 16, fma_avx512};
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return {"avx2+fma", 8, fma_avx2};
#endif
  return {"generic (mul+add)", 4, fma_generic};
}

/// Every core runs independent FMA chains in the widest vector unit it has; a short probe
/// sizes the timed runs to about 20 ms each.
double measure_fma_tflops(int threads, std::map<std::string, std::string>& env) {
  const FmaPath path = best_fma_path();
  std::atomic<float> sink{0};
  auto run = [&](int64_t iterations) {
    return time_parallel(
        threads, 1, [&](int) { sink.store(path.run(iterations), std::memory_order_relaxed); })[0];
  };
  constexpr int64_t kProbe = 1 << 14;
  run(kProbe);
  const double probe = std::max(run(kProbe), 1e-6);
  const int64_t iterations =
      std::clamp<int64_t>(static_cast<int64_t>(kProbe * 0.02 / probe), kProbe, int64_t{1} << 28);
  std::vector<double> seconds;
  for (int r = 0; r < 5; ++r) seconds.push_back(run(iterations));
  env["fma_isa"] = path.isa;
  const double flops = 2.0 * kChains * path.lanes * static_cast<double>(iterations) * threads;
  return flops / median(seconds) / 1e12;
}

std::string compiler_id() {
#if defined(__clang__)
  return std::string("clang ") + __clang_version__;
#elif defined(__GNUC__)
  return std::string("gcc ") + __VERSION__;
#else
  return "unknown";
#endif
}

}  // namespace

std::string utc_timestamp() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

Calibration calibrate_cpu() {
  Calibration result;
  result.device = "cpu";
  result.description = cpu_model();
  result.measured_at = utc_timestamp();
  result.cores = usable_cores();
  result.l2_bytes = cache_bytes(_SC_LEVEL2_CACHE_SIZE);
  result.llc_bytes = static_cast<int64_t>(last_level_cache().bytes);
  result.environment["llc_source"] = last_level_cache().source;
  result.environment["compiler"] = compiler_id();
  result.environment["threads"] = std::to_string(result.cores);
  utsname name{};
  if (uname(&name) == 0)
    result.environment["kernel"] = std::string(name.sysname) + " " + name.release;
  // Sized from the claimed cache, not the capped one: on this VM kind the host's cache may be as
  // large as claimed, and buffers that fit in it measured 55-100 GB/s "memory" bandwidth.
  const CpuBandwidth bandwidth =
      measure_cpu_bandwidth(result.cores, static_cast<int64_t>(last_level_cache().reported));
  result.copy_bandwidth_gbs = bandwidth.best.gbs;
  result.environment["bandwidth_method"] = bandwidth.best.method;
  result.environment["copy_buffer_bytes"] = std::to_string(bandwidth.buffer_bytes);
  for (const BandwidthResult& method : bandwidth.methods)
    result.environment["bandwidth: " + method.method] = fmt::format("{:.1f} GB/s", method.gbs);
  result.fp32_fma_tflops = measure_fma_tflops(result.cores, result.environment);
  return result;
}

#ifndef KERNELARC_WITH_CUDA
Calibration calibrate_cuda(int ordinal) {
  throw InternalError(fmt::format(
      "calibrate cuda:{}: kernelarc was built without CUDA support (no CUDA toolkit was found "
      "at configure time)",
      ordinal));
}
#endif

}  // namespace kernelarc
