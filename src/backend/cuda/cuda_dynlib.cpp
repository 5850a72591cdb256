#include "backend/cuda/cuda_dynlib.h"

#include <dlfcn.h>

#include <filesystem>

namespace kernelarc {

DynamicLibrary DynamicLibrary::open(const std::vector<std::string>& candidates) {
  DynamicLibrary library;
  for (const std::string& candidate : candidates) {
    // RTLD_LOCAL keeps the library's symbols from interposing on a candidate's own copies.
    library.handle_ = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library.handle_ != nullptr) {
      library.name_ = candidate;
      library.error_.clear();
      return library;
    }
    const char* reason = dlerror();
    if (!library.error_.empty()) library.error_ += "; ";
    library.error_ += reason != nullptr ? reason : candidate + ": cannot be loaded";
  }
  if (candidates.empty()) library.error_ = "no library to load";
  return library;
}

void* DynamicLibrary::address(const char* symbol) const {
  return handle_ != nullptr ? dlsym(handle_, symbol) : nullptr;
}

std::vector<std::string> toolkit_library_candidates(const std::string& path_at_build,
                                                    const std::vector<std::string>& sonames) {
  std::vector<std::string> candidates;
  std::error_code error;
  if (!path_at_build.empty() && std::filesystem::exists(path_at_build, error)) {
    candidates.push_back(path_at_build);
  }
  candidates.insert(candidates.end(), sonames.begin(), sonames.end());
  return candidates;
}

}  // namespace kernelarc
