// Helpers shared by the backend tests: temporary directories, solutions built from inline
// sources, and the compiled test candidates of tests/data/backend/candidates.cpp.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "backend/cpu/cpu_compiler.h"
#include "core/problem.h"
#include "core/test_support.h"

namespace kernelarc::test {

using kernelarc::testing::TempDir;

inline std::string read_text(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

inline Solution make_solution(std::vector<SourceFile> sources,
                              std::string entry_symbol = "ka_run") {
  Solution solution;
  solution.name = "test_solution";
  solution.languages = {"cpp"};
  solution.entry_file = sources.empty() ? "" : sources.front().path;
  solution.entry_symbol = std::move(entry_symbol);
  solution.sources = std::move(sources);
  return solution;
}

/// Fast flags for test builds: the tests check behaviour, not speed.
inline CpuCompileOptions test_compile_options(const std::filesystem::path& cache_dir) {
  CpuCompileOptions options;
  options.flags = {"-O1"};
  options.cache_dir = cache_dir;
  return options;
}

/// The library built from tests/data/backend/candidates.cpp. The build cache is shared by all
/// test processes (ctest runs each test in its own), which the compile cache is made for: it
/// is keyed by content and safe under concurrent builds.
inline const std::filesystem::path& candidates_library() {
  static std::filesystem::path library = [] {
    std::filesystem::path source =
        std::filesystem::path(KERNELARC_SOURCE_DIR) / "tests/data/backend/candidates.cpp";
    std::filesystem::path cache = std::filesystem::temp_directory_path() /
                                  ("kernelarc-backend-test-cache-" + std::to_string(getuid()));
    CompileResult result = compile_cpu_solution(
        make_solution({{"candidates.cpp", read_text(source)}}), test_compile_options(cache));
    if (!result.ok) throw std::runtime_error("cannot build the test candidates:\n" + result.log);
    return result.library;
  }();
  return library;
}

}  // namespace kernelarc::test
