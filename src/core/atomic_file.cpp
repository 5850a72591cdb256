#include "core/atomic_file.h"

#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <fstream>
#include <string>

#include "core/error.h"

namespace kernelarc {

namespace {

std::filesystem::path temporary_path(const std::filesystem::path& path) {
  static std::atomic<uint64_t> counter{0};
  return path.parent_path() / ("." + path.filename().string() + "." + std::to_string(getpid()) +
                               "." + std::to_string(counter.fetch_add(1)) + ".tmp");
}

}  // namespace

void write_file_atomically(const std::filesystem::path& path, std::string_view content) {
  const std::filesystem::path temporary = temporary_path(path);
  std::error_code ignored;
  {
    std::ofstream file(temporary, std::ios::binary | std::ios::trunc);
    file.write(content.data(), static_cast<std::streamsize>(content.size()));
    if (!file.flush()) {
      std::filesystem::remove(temporary, ignored);
      throw InternalError("cannot write " + temporary.string());
    }
  }
  std::error_code error;
  std::filesystem::rename(temporary, path, error);
  if (error) {
    std::filesystem::remove(temporary, ignored);
    throw InternalError("cannot rename " + temporary.string() + " to " + path.string() + ": " +
                        error.message());
  }
}

}  // namespace kernelarc
