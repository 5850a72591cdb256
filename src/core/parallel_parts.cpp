#include "core/parallel_parts.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include <xxhash.h>

namespace kernelarc {
namespace {

constexpr std::size_t kMinBytesPerPart = std::size_t{4} << 20;
constexpr std::size_t kHashBlockBytes = std::size_t{16} << 20;

}  // namespace

std::size_t run_in_parts(
    std::size_t count, std::size_t min_per_part,
    const std::function<void(std::size_t part, std::size_t begin, std::size_t end)>& part) {
  const std::size_t cores = std::max(1u, std::thread::hardware_concurrency());
  const std::size_t parts = std::clamp<std::size_t>(count / std::max<std::size_t>(min_per_part, 1),
                                                    1, std::min<std::size_t>(cores, kMaxParts));
  auto range = [&](std::size_t index) {
    part(index, count * index / parts, count * (index + 1) / parts);
  };
  std::vector<std::jthread> helpers;
  for (std::size_t index = 1; index < parts; ++index) helpers.emplace_back(range, index);
  range(0);
  return parts;  // the helpers join as they go out of scope
}

void copy_in_parts(std::byte* destination, const std::byte* source, std::size_t bytes) {
  run_in_parts(bytes, kMinBytesPerPart, [&](std::size_t, std::size_t begin, std::size_t end) {
    std::memcpy(destination + begin, source + begin, end - begin);
  });
}

bool equal_in_parts(const std::byte* a, const std::byte* b, std::size_t bytes) {
  std::atomic<bool> equal = true;
  run_in_parts(bytes, kMinBytesPerPart, [&](std::size_t, std::size_t begin, std::size_t end) {
    if (std::memcmp(a + begin, b + begin, end - begin) != 0) equal = false;
  });
  return equal;
}

uint64_t hash_in_parts(std::span<const std::byte> bytes, uint64_t seed) {
  const std::size_t blocks = (bytes.size() + kHashBlockBytes - 1) / kHashBlockBytes;
  std::vector<uint64_t> hashes(blocks);
  run_in_parts(blocks, 1, [&](std::size_t, std::size_t begin, std::size_t end) {
    for (std::size_t block = begin; block < end; ++block) {
      const std::size_t offset = block * kHashBlockBytes;
      hashes[block] =
          XXH3_64bits(bytes.data() + offset, std::min(kHashBlockBytes, bytes.size() - offset));
    }
  });
  return XXH3_64bits_withSeed(hashes.data(), hashes.size() * sizeof(uint64_t), seed);
}

}  // namespace kernelarc
