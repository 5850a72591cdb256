// Helpers shared by the oracle tests: scratch directories, fixtures, environment overrides and
// looking at tensors and cache files.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/problem.h"
#include "core/tensor.h"
#include "core/test_support.h"

namespace kernelarc::oracle_testing {

using kernelarc::testing::TempDir;
using kernelarc::testing::input_error_of;

/// Sets (or, with nullopt, unsets) an environment variable for the lifetime of the object.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::optional<std::string>& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) {
      ::setenv(name, value->c_str(), 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

inline std::filesystem::path fixture(const std::string& name) {
  return std::filesystem::path(KERNELARC_SOURCE_DIR) / "tests" / "data" / "oracle" / name;
}

inline Problem fixture_problem(const std::string& name) {
  return load_problem(fixture(name));
}

inline const Workload& workload_named(const Problem& problem, const std::string& uuid) {
  for (const Workload& workload : problem.workloads) {
    if (workload.uuid == uuid) return workload;
  }
  throw std::runtime_error("fixture has no workload " + uuid);
}

/// The message of the InputError that `action` throws; a test failure if it throws none.

inline std::vector<double> values(const HostTensor& tensor) {
  std::vector<double> result;
  for (int64_t i = 0; i < tensor.numel(); ++i) result.push_back(tensor.at(i));
  return result;
}

/// Files directly under `dir` whose names end with `suffix`.
inline std::vector<std::filesystem::path> files_ending(const std::filesystem::path& dir,
                                                       const std::string& suffix) {
  std::vector<std::filesystem::path> found;
  if (!std::filesystem::exists(dir)) return found;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().filename().string().ends_with(suffix)) found.push_back(entry.path());
  }
  return found;
}

/// Writes an executable shell script.
inline std::filesystem::path write_script(const std::filesystem::path& path,
                                          const std::string& body) {
  std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
  std::filesystem::permissions(path, std::filesystem::perms::owner_all);
  return path;
}

}  // namespace kernelarc::oracle_testing
