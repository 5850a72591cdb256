// The CPU device: host memory, memcpy, and a CLOCK_MONOTONIC timer read by raw system calls.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <new>
#include <string>

#include "backend/cpu/cpu_cache.h"
#include "backend/cpu/raw_clock.h"
#include "backend/device.h"
#include "core/text.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace kernelarc {
namespace {

constexpr std::size_t kAlignment = 64;
constexpr std::size_t kCacheLine = 64;
constexpr std::size_t kMaxFlushBytes = std::size_t{64} << 20;

#if defined(__x86_64__) || defined(__i386__)
bool has_clflushopt() {
  static const bool supported = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return __get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) && (ebx & (1u << 23)) != 0;
  }();
  return supported;
}

// clflush serializes every line (80 ms for 32 MiB on a Xeon VM); clflushopt flushes the same
// lines without ordering them against each other (2 ms), and the fence orders them before the
// timed call.
// (The intrinsic takes a non-const pointer although flushing does not change the data.)
__attribute__((target("clflushopt"))) void flush_lines_unordered(const char* begin,
                                                                 std::size_t bytes) {
  char* lines = const_cast<char*>(begin);
  for (std::size_t offset = 0; offset < bytes; offset += kCacheLine) _mm_clflushopt(lines + offset);
  if (bytes > 0) _mm_clflushopt(lines + bytes - 1);
  _mm_mfence();
}
#endif

}  // namespace

std::string host_cpu_model() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    auto colon = line.find(':');
    if (colon != std::string::npos) return line.substr(line.find_first_not_of(" \t", colon + 1));
  }
  return "unknown CPU";
}

namespace {

class CpuDevice final : public Device {
 public:
  // Twice the LLC, capped: on hosts that report a huge shared LLC (260 MiB seen on a 2-core VM)
  // writing 2x of it costs 0.3 s per timed run. The cap is safe because evict() already
  // flushes every line of the tensors themselves; the buffer only cools the rest of the caches.
  CpuDevice() : flush_bytes_(std::min(2 * last_level_cache().bytes, kMaxFlushBytes)) {}
  ~CpuDevice() override { std::free(flush_buffer_); }

  std::string kind() const override { return "cpu"; }

  std::string description() const override {
    std::string text = host_cpu_model();
    std::string governor = read_first_line("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor");
    if (!governor.empty()) text += " (governor: " + governor + ")";
    return text;
  }

  void* allocate(std::size_t bytes) override {
    std::size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
    void* pointer = std::aligned_alloc(kAlignment, rounded > 0 ? rounded : kAlignment);
    if (!pointer) throw std::bad_alloc();
    return pointer;
  }

  void release(void* pointer) override { std::free(pointer); }

  void copy_from_host(void* device_dst, const void* host_src, std::size_t bytes) override {
    if (bytes > 0) std::memcpy(device_dst, host_src, bytes);
  }

  void copy_to_host(void* host_dst, const void* device_src, std::size_t bytes) override {
    if (bytes > 0) std::memcpy(host_dst, device_src, bytes);
  }

  void copy_on_device(void* device_dst, const void* device_src, std::size_t bytes) override {
    if (bytes > 0) std::memcpy(device_dst, device_src, bytes);
  }

  void fill_pattern(void* device_dst, std::size_t bytes,
                    std::span<const uint8_t> pattern) override {
    auto* out = static_cast<uint8_t*>(device_dst);
    if (pattern.empty() || bytes == 0) return;
    std::size_t filled = std::min(pattern.size(), bytes);
    std::memcpy(out, pattern.data(), filled);
    // Doubling copies keep this memcpy-fast for one-byte and odd-sized patterns alike.
    while (filled < bytes) {
      std::size_t chunk = std::min(filled, bytes - filled);
      std::memcpy(out + filled, out, chunk);
      filled += chunk;
    }
  }

  void evict(const void* data, std::size_t bytes) override {
#if defined(__x86_64__) || defined(__i386__)
    const auto* begin = static_cast<const char*>(data);
    if (has_clflushopt()) {
      flush_lines_unordered(begin, bytes);
      return;
    }
    for (std::size_t offset = 0; offset < bytes; offset += kCacheLine) _mm_clflush(begin + offset);
    if (bytes > 0) _mm_clflush(begin + bytes - 1);
    _mm_mfence();
#else
    (void)data;
    (void)bytes;
#endif
  }

  void flush_cache() override {
    if (!flush_buffer_) flush_buffer_ = static_cast<uint8_t*>(allocate(flush_bytes_));
    // Writing every line evicts what the candidate's data left in the cache; reading the
    // lines back into a checksum keeps the compiler from dropping the writes.
    ++flush_round_;
    for (std::size_t i = 0; i < flush_bytes_; i += kAlignment)
      flush_buffer_[i] = static_cast<uint8_t>(flush_round_ + i);
    uint64_t sum = 0;
    for (std::size_t i = 0; i < flush_bytes_; i += kAlignment) sum += flush_buffer_[i];
    checksum_ = checksum_ + sum;
  }

  void* stream() override {
    return nullptr;
  }

  TimedCall timed_call(const std::function<int()>& call) override {
    TimedCall result;
    // The raw system call, not the steady clock: libc's and the vDSO's clock code share the
    // process with the candidate, which could patch them.
    int64_t start = raw_monotonic_ns();
    result.return_code = call();
    int64_t stop = raw_monotonic_ns();
    result.nanoseconds = static_cast<double>(stop - start);
    result.clock = "steady_clock";
    return result;
  }

  void synchronize() override {}

 private:
  std::size_t flush_bytes_;
  uint8_t* flush_buffer_ = nullptr;
  uint64_t flush_round_ = 0;
  volatile uint64_t checksum_ = 0;
};

}  // namespace

std::unique_ptr<Device> make_cpu_device() {
  return std::make_unique<CpuDevice>();
}

}  // namespace kernelarc
