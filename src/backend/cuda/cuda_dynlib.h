// Loading the NVIDIA libraries (NVRTC, CUPTI, NVML) at run time instead of linking them.
//
// kernelarc must start and run its CPU path on machines with no GPU driver, and its parent
// process must not load CUDA unless a CUDA device is used. So nothing links libnvrtc, libcupti or
// libnvidia-ml: each is opened with dlopen by the code that needs it, the first time it is
// needed, and kept open for the life of the process.
#pragma once

#include <string>
#include <vector>

namespace kernelarc {

/// A library opened with dlopen that is never closed (its functions may be called until exit).
class DynamicLibrary {
 public:
  /// Tries each candidate (a soname or a path) in order. On failure the result is not loaded()
  /// and error() names every candidate with the loader's reason.
  static DynamicLibrary open(const std::vector<std::string>& candidates);

  bool loaded() const { return handle_ != nullptr; }
  const std::string& error() const { return error_; }
  /// The candidate that was opened.
  const std::string& name() const { return name_; }

  /// The function `symbol`, or nullptr when the library lacks it. `Function` is a pointer type.
  template <typename Function>
  Function function(const char* symbol) const {
    return reinterpret_cast<Function>(address(symbol));
  }

 private:
  void* address(const char* symbol) const;

  void* handle_ = nullptr;
  std::string name_;
  std::string error_;
};

/// Candidates for a library of the CUDA toolkit: `path_at_build` first (the file found when
/// kernelarc was built; skipped when empty), then each soname as the loader finds it.
std::vector<std::string> toolkit_library_candidates(const std::string& path_at_build,
                                                    const std::vector<std::string>& sonames);

}  // namespace kernelarc
