#include "core/hash.h"

#include <cstdint>

#include <xxhash.h>

#include "core/error.h"

namespace kernelarc {
namespace {

XXH3_state_t* state_of(void* state) {
  return static_cast<XXH3_state_t*>(state);
}

std::string to_hex(XXH128_hash_t hash) {
  XXH128_canonical_t canonical;
  XXH128_canonicalFromHash(&canonical, hash);
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(32);
  for (unsigned char byte : canonical.digest) {
    hex += kDigits[byte >> 4];
    hex += kDigits[byte & 0xF];
  }
  return hex;
}

}  // namespace

ContentHasher::ContentHasher() : state_(XXH3_createState()) {
  if (state_ == nullptr) throw InternalError("XXH3_createState failed");
  XXH3_128bits_reset(state_of(state_));
}

ContentHasher::~ContentHasher() {
  XXH3_freeState(state_of(state_));
}

ContentHasher& ContentHasher::add(std::string_view field) {
  // A fixed-width little-endian length prefix makes the field boundaries part of the hash.
  unsigned char length[8];
  const uint64_t size = field.size();
  for (int byte = 0; byte < 8; ++byte) length[byte] = (size >> (8 * byte)) & 0xFF;
  XXH3_128bits_update(state_of(state_), length, sizeof(length));
  XXH3_128bits_update(state_of(state_), field.data(), field.size());
  return *this;
}

std::string ContentHasher::hex() const {
  return to_hex(XXH3_128bits_digest(state_of(state_)));
}

std::string content_hash(std::string_view data) {
  return to_hex(XXH3_128bits(data.data(), data.size()));
}

}  // namespace kernelarc
