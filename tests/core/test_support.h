// Helpers shared by the tests of every layer: a scratch directory and capturing an InputError's
// message.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "core/error.h"

namespace kernelarc::testing {

/// A fresh directory under the system temp dir, removed with everything in it at destruction.
class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    path_ =
        std::filesystem::temp_directory_path() / ("kernelarc_test_" + std::to_string(::getpid()) +
                                                  "_" + std::to_string(counter.fetch_add(1)));
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

/// The Python the oracle would run that has torch ($KERNELARC_PYTHON alone when set, else the
/// first of python3 and /usr/bin/python3 that has it), or "" for none: what a test needing torch
/// skips on. Looked up once per process, by finding torch's package rather than importing it
/// (a second against the import's 1.5 s on the CI machine, for every test process that asks).
inline const std::string& torch_python() {
  static const std::string found = [] {
    const char* env = std::getenv("KERNELARC_PYTHON");
    const std::vector<std::string> candidates =
        env != nullptr && *env != '\0' ? std::vector<std::string>{env}
                                       : std::vector<std::string>{"python3", "/usr/bin/python3"};
    for (const std::string& candidate : candidates) {
      const std::string probe =
          "'" + candidate +
          "' -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec(\"torch\") is None)'"
          " >/dev/null 2>&1";
      if (std::system(probe.c_str()) == 0) return candidate;
    }
    return std::string();
  }();
  return found;
}

}  // namespace kernelarc::testing
