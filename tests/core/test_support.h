// Helpers shared by the tests of every layer: a scratch directory and capturing an InputError's
// message.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include "core/error.h"

namespace kernelarc::testing {

/// A fresh directory under the system temp dir, removed with everything in it at destruction.
class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    path_ = std::filesystem::temp_directory_path() /
            ("kernelarc_test_" + std::to_string(::getpid()) + "_" +
             std::to_string(counter.fetch_add(1)));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

  /// Writes a file (creating parent directories) and returns its path.
  std::filesystem::path write(const std::string& name, const std::string& content) const {
    const std::filesystem::path file = path_ / name;
    std::filesystem::create_directories(file.parent_path());
    std::ofstream(file, std::ios::binary) << content;
    return file;
  }

 private:
  std::filesystem::path path_;
};

/// The message of the InputError that `action` throws; a test failure if it throws none.
template <typename Action>
std::string input_error_of(Action&& action) {
  try {
    action();
  } catch (const InputError& error) {
    return error.what();
  }
  ADD_FAILURE() << "expected an InputError";
  return "";
}

/// Where the checked-in fixtures live.
inline std::filesystem::path fixture(const std::string& relative) {
  return std::filesystem::path(KERNELARC_SOURCE_DIR) / "tests" / "data" / relative;
}

}  // namespace kernelarc::testing
