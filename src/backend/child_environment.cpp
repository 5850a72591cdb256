#include "backend/child_environment.h"

#include <algorithm>
#include <array>

extern char** environ;

namespace kernelarc {

namespace {

// Whole names. CUDA_* and the others below are prefixes: the driver and runtime read many.
constexpr std::array<std::string_view, 12> kNames = {"PATH",
                                                     "LANG",
                                                     "LANGUAGE",
                                                     "TZ",
                                                     "TMPDIR",
                                                     "LD_LIBRARY_PATH",
                                                     "KERNELARC_DATA_DIR",
                                                     "KERNELARC_NVCC",
                                                     "KERNELARC_NCU",
                                                     "KERNELARC_TEMPLATES",
                                                     "OPENBLAS_NUM_THREADS",
                                                     "MKL_NUM_THREADS"};
constexpr std::array<std::string_view, 6> kPrefixes = {"LC_",  "CUDA_", "NVIDIA_",
                                                       "OMP_", "GOMP_", "KMP_"};

}  // namespace

bool is_passed_variable(std::string_view name) {
  if (std::find(kNames.begin(), kNames.end(), name) != kNames.end()) return true;
  return std::any_of(kPrefixes.begin(), kPrefixes.end(),
                     [&](std::string_view prefix) { return name.starts_with(prefix); });
}

std::vector<std::string> passed_variables(const std::vector<std::string>& entries) {
  std::vector<std::string> passed;
  for (const std::string& entry : entries) {
    const std::size_t equals = entry.find('=');
    if (equals != std::string::npos &&
        is_passed_variable(std::string_view(entry).substr(0, equals)))
      passed.push_back(entry);
  }
  return passed;
}

std::vector<std::string> current_environment() {
  std::vector<std::string> entries;
  for (char** entry = environ; entry && *entry; ++entry) entries.emplace_back(*entry);
  return entries;
}

std::vector<std::string> child_environment() {
  return passed_variables(current_environment());
}

}  // namespace kernelarc
