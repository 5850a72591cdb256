#include "backend/cuda/cuda_build.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <set>
#include <sstream>

#include "core/error.h"

namespace kernelarc {

namespace {

std::filesystem::path build_root(const std::filesystem::path& cache_dir, std::string_view kind) {
  if (cache_dir.empty()) throw InternalError("a build without a cache_dir");
  return cache_dir / kind;
}

}  // namespace

std::optional<std::filesystem::path> CudaBuild::cached(const std::filesystem::path& cache_dir,
                                                       const std::string& key,
                                                       const std::string& artifact,
                                                       std::string_view kind) {
  std::filesystem::path path = build_root(cache_dir, kind) / key / artifact;
  std::error_code error;
  if (std::filesystem::exists(path, error)) return path;
  return std::nullopt;
}

CudaBuild::CudaBuild(const std::filesystem::path& cache_dir, std::string key,
                     std::string_view kind) {
  static std::atomic<uint64_t> counter{0};
  const std::filesystem::path root = build_root(cache_dir, kind);
  final_dir_ = root / key;
  work_dir_ =
      root / (".tmp-" + key + "-" + std::to_string(getpid()) + "-" + std::to_string(counter++));
  std::error_code error;
  std::filesystem::remove_all(work_dir_, error);
  std::filesystem::create_directories(work_dir_, error);
  if (error) throw InternalError("cannot create " + work_dir_.string() + ": " + error.message());
}

CudaBuild::~CudaBuild() {
  std::error_code ignored;
  if (!committed_) std::filesystem::remove_all(work_dir_, ignored);
}

std::filesystem::path CudaBuild::commit(const std::string& artifact) {
  std::error_code renamed;
  std::filesystem::rename(work_dir_, final_dir_, renamed);
  committed_ = !renamed;
  if (renamed) {
    std::error_code ignored;
    std::filesystem::remove_all(work_dir_, ignored);  // another build won the race
    committed_ = true;
  }
  const std::filesystem::path result = final_dir_ / artifact;
  if (!std::filesystem::exists(result)) {
    throw InternalError("cannot move the build into " + final_dir_.string() + ": " +
                        renamed.message());
  }
  return result;
}

void write_build_file(const std::filesystem::path& path, std::string_view content) {
  std::error_code error;
  std::filesystem::create_directories(path.parent_path(), error);
  std::ofstream file(path, std::ios::binary);
  file.write(content.data(), static_cast<std::streamsize>(content.size()));
  if (!file) throw InternalError("cannot write " + path.string());
}

std::optional<std::string> check_source_paths(const Solution& solution) {
  std::set<std::string> seen;
  for (const SourceFile& source : solution.sources) {
    const std::filesystem::path path(source.path);
    bool escapes = path.empty() || path.is_absolute();
    for (const auto& part : path.lexically_normal()) escapes = escapes || part == "..";
    if (escapes) {
      return "source path \"" + source.path + "\" must be relative and stay inside the solution";
    }
    if (!seen.insert(path.lexically_normal().string()).second) {
      return "source path \"" + source.path + "\" is given twice";
    }
  }
  return std::nullopt;
}

bool uses_wgmma(const Solution& solution) {
  return std::any_of(solution.sources.begin(), solution.sources.end(), [](const SourceFile& s) {
    return s.content.find("wgmma.mma_async") != std::string::npos;
  });
}

std::vector<std::string> wgmma_compile_notes(std::string_view log) {
  std::vector<std::string> notes;
  std::size_t start = 0;
  while (start < log.size()) {
    std::size_t end = log.find('\n', start);
    if (end == std::string_view::npos) end = log.size();
    const std::string_view line = log.substr(start, end - start);
    if (const std::size_t code = line.find("(C75"); code != std::string_view::npos)
      notes.emplace_back(line.substr(code));
    start = end + 1;
  }
  return notes;
}

std::vector<std::string> cached_compile_notes(const std::filesystem::path& artifact) {
  std::ifstream file(artifact.parent_path() / "build.log");
  if (!file) return {};
  std::stringstream log;
  log << file.rdbuf();
  return wgmma_compile_notes(log.str());
}

std::string trim_build_log(const std::string& output, std::size_t max_lines) {
  std::istringstream stream(output);
  std::string trimmed;
  std::size_t lines = 0;
  for (std::string line; std::getline(stream, line); ++lines) {
    if (lines < max_lines) trimmed += line + "\n";
  }
  if (lines > max_lines) {
    trimmed += "... (" + std::to_string(lines - max_lines) + " more lines)\n";
  }
  return trimmed;
}

}  // namespace kernelarc
