// Internals shared by the two CUDA build paths (nvcc in cuda_compiler.cpp, NVRTC in
// cuda_compiler_nvrtc.cpp): the build cache's directories, source checks and log trimming.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backend/cuda/cuda_compiler.h"
#include "core/problem.h"

namespace kernelarc {

/// One build in the cache, <cache_dir>/<kind>/<key> (kind "cuda", or "torch" for the PyTorch
/// extensions that eval/torch_binding builds for any device). It is made in a private temporary
/// directory and renamed into place, so concurrent builds of one key never see each other's
/// half-written files: the first rename wins and the others are discarded.
class CudaBuild {
 public:
  CudaBuild(const std::filesystem::path& cache_dir, std::string key,
            std::string_view kind = "cuda");
  ~CudaBuild();
  CudaBuild(const CudaBuild&) = delete;
  CudaBuild& operator=(const CudaBuild&) = delete;

  /// final_dir()/artifact of an earlier build of this key, or nullopt when there is none.
  /// Throws InternalError for an empty cache_dir.
  static std::optional<std::filesystem::path> cached(const std::filesystem::path& cache_dir,
                                                     const std::string& key,
                                                     const std::string& artifact,
                                                     std::string_view kind = "cuda");

  /// Where a finished build of this key lives.
  const std::filesystem::path& final_dir() const { return final_dir_; }
  /// The private directory to build in, created empty.
  const std::filesystem::path& work_dir() const { return work_dir_; }
  /// Moves the work directory into place (unless another build got there first) and returns
  /// final_dir()/artifact. Throws InternalError when the artifact is then missing.
  std::filesystem::path commit(const std::string& artifact);

 private:
  std::filesystem::path final_dir_;
  std::filesystem::path work_dir_;
  bool committed_ = false;
};

/// Writes a file, creating its directories. Throws InternalError on failure.
void write_build_file(const std::filesystem::path& path, std::string_view content);

/// Why the solution's sources cannot be written into a build directory (an absolute path or
/// one with "..", a duplicate), or nullopt when they can.
std::optional<std::string> check_source_paths(const Solution& solution);

/// Whether the solution issues wgmma. ptxas says how it compiled those only when asked for its
/// report, so such solutions are built with -Xptxas=-v.
bool uses_wgmma(const Solution& solution);

/// ptxas's remarks on the wgmma code of a build log made with -Xptxas=-v: its C75xx lines
/// ("(C7520) Potential Performance Loss: wgmma.mma_async instructions are serialized ...",
/// "(C7519) warpgroup.arrive is injected ..."), trimmed, in order.
std::vector<std::string> wgmma_compile_notes(std::string_view log);

/// The notes of a build in the cache, from the build.log kept beside its `artifact`.
std::vector<std::string> cached_compile_notes(const std::filesystem::path& artifact);

/// The head of a compiler's output (the first errors explain the rest), at most `max_lines`.
std::string trim_build_log(const std::string& output, std::size_t max_lines = 60);

/// The NVRTC path of compile_cuda_solution, for an architecture already selected.
CompileResult compile_device_only_solution(const Solution& solution, const Definition& definition,
                                           const CudaCompileOptions& options,
                                           const std::string& arch);

}  // namespace kernelarc
