// What every backend's compiler returns: a loadable library (or launch plan) from the build
// cache, or the compiler's complaint. A failing compile is a result, never an exception.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace kernelarc {

struct CompileResult {
  bool ok = false;
  std::filesystem::path library;  ///< the .so (or a CUDA launch plan) when ok
  std::string log;                ///< compiler output (trimmed), or why it failed
  bool cached = false;
  double seconds = 0;
  std::string cache_key;
  /// The compiler's remarks on code it built but made slow (ptxas serialising wgmma, ...), one
  /// line each, also for a build found in the cache.
  std::vector<std::string> notes;
};

}  // namespace kernelarc
