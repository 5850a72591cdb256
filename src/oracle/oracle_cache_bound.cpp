#include "oracle/oracle_cache_bound.h"

#include <algorithm>
#include <fstream>
#include <system_error>

namespace kernelarc {

namespace {

constexpr const char* kUsedMarker = ".used";

std::uintmax_t bytes_under(const std::filesystem::path& dir) {
  std::uintmax_t total = 0;
  std::error_code error;
  for (std::filesystem::recursive_directory_iterator it(dir, error), end; !error && it != end;
       it.increment(error)) {
    std::error_code ignored;
    if (it->is_regular_file(ignored)) total += it->file_size(ignored);
  }
  return total;
}

std::filesystem::file_time_type last_used(const std::filesystem::path& dir) {
  std::error_code error;
  auto time = std::filesystem::last_write_time(dir / kUsedMarker, error);
  if (error) time = std::filesystem::last_write_time(dir, error);
  return error ? std::filesystem::file_time_type::min() : time;
}

}  // namespace

std::uintmax_t default_oracle_cache_bytes(const std::filesystem::path& cache_dir) {
  constexpr std::uintmax_t kFloor = std::uintmax_t{4} << 30;
  std::error_code error;
  std::filesystem::path existing = cache_dir;
  while (!existing.empty() && !std::filesystem::exists(existing, error))
    existing = existing.parent_path();
  const auto space = std::filesystem::space(existing.empty() ? "." : existing, error);
  return error ? kFloor : std::max(kFloor, space.capacity / 4);
}

void mark_oracle_cache_used(const std::filesystem::path& problem_dir) {
  std::error_code error;
  std::filesystem::create_directories(problem_dir, error);
  // Rewriting the marker is what dates it: its modification time is the problem's last use.
  std::ofstream(problem_dir / kUsedMarker, std::ios::trunc).put('\n');
}

std::vector<std::filesystem::path> bound_oracle_cache(const std::filesystem::path& cache_dir,
                                                      const std::filesystem::path& keep,
                                                      std::uintmax_t max_bytes) {
  struct Candidate {
    std::filesystem::path dir;
    std::filesystem::file_time_type used;
    std::uintmax_t bytes = 0;
  };
  std::vector<Candidate> others;
  std::uintmax_t total = 0;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(cache_dir, error)) {
    std::error_code ignored;
    // .scratch holds the job files of interpreters at work: never the cache's to drop.
    if (!entry.is_directory(ignored) || entry.path().filename().string().starts_with(".")) {
      continue;
    }
    const std::uintmax_t bytes = bytes_under(entry.path());
    total += bytes;
    if (std::filesystem::equivalent(entry.path(), keep, ignored)) continue;
    others.push_back({entry.path(), last_used(entry.path()), bytes});
  }
  std::sort(others.begin(), others.end(),
            [](const Candidate& a, const Candidate& b) { return a.used < b.used; });
  std::vector<std::filesystem::path> removed;
  for (const Candidate& candidate : others) {
    if (total <= max_bytes) break;
    std::error_code ignored;
    std::filesystem::remove_all(candidate.dir, ignored);
    total -= candidate.bytes;
    removed.push_back(candidate.dir);
  }
  return removed;
}

}  // namespace kernelarc
