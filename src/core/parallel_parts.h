// Splits large memory-bound work over the cores: the guard copies, compares and hashes every
// input and output of every checked call, and a 256 MiB tensor takes tens of milliseconds on
// one core.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>

namespace kernelarc {

/// The most parts run_in_parts() splits work into.
inline constexpr std::size_t kMaxParts = 32;

/// Calls part(begin, end) for consecutive ranges covering [0, count), each at least
/// `min_per_part` long (except when count is smaller), on up to min(cores, kMaxParts) threads, and
/// returns the number of parts once all are done. The ranges depend only on count,
/// min_per_part and the number of cores, never on timing; part(...) must not throw.
std::size_t run_in_parts(
    std::size_t count, std::size_t min_per_part,
    const std::function<void(std::size_t part, std::size_t begin, std::size_t end)>& part);

/// memcpy over the cores.
void copy_in_parts(std::byte* destination, const std::byte* source, std::size_t bytes);
/// memcmp(...) == 0 over the cores.
bool equal_in_parts(const std::byte* a, const std::byte* b, std::size_t bytes);
/// XXH3 of `bytes` in fixed 16 MiB blocks hashed over the cores, the block hashes then hashed
/// in order with `seed`: the same bytes give the same value on every machine.
uint64_t hash_in_parts(std::span<const std::byte> bytes, uint64_t seed);

}  // namespace kernelarc
