// Content hashes for cache keys (XXH3, 128 bits, as 32 hex digits).
#pragma once

#include <string>
#include <string_view>

namespace kernelarc {

class ContentHasher {
 public:
  ContentHasher();
  ~ContentHasher();
  ContentHasher(const ContentHasher&) = delete;
  ContentHasher& operator=(const ContentHasher&) = delete;

  /// Adds a field; fields are length-prefixed so ("ab","c") and ("a","bc") differ.
  ContentHasher& add(std::string_view field);
  std::string hex() const;

 private:
  void* state_;
};

std::string content_hash(std::string_view data);

}  // namespace kernelarc
