// A workspace folder (default ".kernelarc"): the metadata database kernelarc.db and the object
// store objects/, opened together.
#pragma once

#include <filesystem>

#include "store/database.h"
#include "store/object_store.h"

namespace kernelarc {

inline constexpr const char* kDefaultWorkspace = ".kernelarc";

class Workspace {
 public:
  /// Opens the workspace at `root`, creating the folder, database and object store as needed.
  /// A root that exists but is not a directory is an InputError.
  explicit Workspace(const std::filesystem::path& root = kDefaultWorkspace);

  const std::filesystem::path& root() const { return root_; }
  Database& database() { return database_; }
  ObjectStore& objects() { return objects_; }
  const ObjectStore& objects() const { return objects_; }

 private:
  std::filesystem::path root_;
  ObjectStore objects_;
  Database database_;
};

}  // namespace kernelarc
