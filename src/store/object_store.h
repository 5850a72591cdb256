// A content-addressed object store: immutable blobs (solutions, traces, sources, logs) named by
// their content hash, under <root>/<first 2 hex digits>/<other 30>.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace kernelarc {

class ObjectStore {
 public:
  /// Creates the root directory when missing.
  explicit ObjectStore(std::filesystem::path root);

  /// Stores the bytes and returns their key (core/hash.h content_hash). Written to a temporary
  /// file in the object's directory, fsynced and renamed into place, so an object either exists
  /// whole or not at all; an object already present is left as it is.
  std::string put(std::string_view bytes);
  /// The bytes stored under the key; a missing object, or one whose content no longer matches
  /// its key, is an InputError naming its path.
  std::string get(std::string_view key) const;
  bool has(std::string_view key) const;

  /// Where the object with this key lives (whether or not it exists).
  std::filesystem::path path_of(std::string_view key) const;
  const std::filesystem::path& root() const { return root_; }

 private:
  std::filesystem::path root_;
};

}  // namespace kernelarc
