#include "core/rng.h"

#include <bit>
#include <cmath>
#include <numbers>

namespace kernelarc {

namespace {

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

Rng::Rng(uint64_t seed) {
  for (uint64_t& word : state_) word = splitmix64(seed);
}

uint64_t Rng::next() {
  const uint64_t result = std::rotl(state_[1] * 5, 7) * 9;
  const uint64_t shifted = state_[1] << 17;
  state_[2] ^= state_[0];
  state_[3] ^= state_[1];
  state_[1] ^= state_[2];
  state_[0] ^= state_[3];
  state_[2] ^= shifted;
  state_[3] = std::rotl(state_[3], 45);
  return result;
}

uint64_t Rng::below(uint64_t bound) {
  // Reject the low values that would make some residues more likely than others.
  const uint64_t threshold = (0 - bound) % bound;
  uint64_t value = next();
  while (value < threshold) value = next();
  return value % bound;
}

int64_t Rng::integer(int64_t low, int64_t high) {
  return low + static_cast<int64_t>(below(static_cast<uint64_t>(high - low)));
}

double Rng::uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

double Rng::normal() {
  if (has_spare_) {
    has_spare_ = false;
    return spare_normal_;
  }
  const double radius = std::sqrt(-2.0 * std::log(1.0 - uniform()));  // 1 - u is in (0, 1]
  const double angle = 2.0 * std::numbers::pi * uniform();
  spare_normal_ = radius * std::sin(angle);
  has_spare_ = true;
  return radius * std::cos(angle);
}

}  // namespace kernelarc
