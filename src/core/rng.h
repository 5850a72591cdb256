// A seeded, portable random generator: xoshiro256** seeded through splitmix64, with normals by
// Box-Muller. The standard library's distributions differ between implementations, so whatever
// must be the same on every platform for a seed (native-reference inputs, the guard's audit
// position, the synthesizer's draws) goes through this class.
#pragma once

#include <array>
#include <cstdint>

namespace kernelarc {

class Rng {
 public:
  explicit Rng(uint64_t seed);
  /// The next raw 64-bit output.
  uint64_t next();
  /// Uniform in [0, bound), without modulo bias; bound > 0.
  uint64_t below(uint64_t bound);
  /// Uniform integer in [low, high); high > low.
  int64_t integer(int64_t low, int64_t high);
  /// Uniform in [0, 1), 53 random bits.
  double uniform();
  double uniform(double low, double high) { return low + (high - low) * uniform(); }
  /// Standard normal.
  double normal();

 private:
  std::array<uint64_t, 4> state_{};
  double spare_normal_ = 0;
  bool has_spare_ = false;
};

}  // namespace kernelarc
