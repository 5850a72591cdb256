#include "core/paths.h"

#include <cstdlib>
#include <system_error>

#include "core/error.h"

namespace kernelarc {

std::filesystem::path self_executable() {
  std::error_code error;
  std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) throw InternalError("cannot read /proc/self/exe: " + error.message());
  return exe;
}

std::filesystem::path data_dir() {
  if (const char* env = std::getenv("KERNELARC_DATA_DIR"); env != nullptr && *env != '\0') {
    return env;
  }
  std::error_code error;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", error);
  if (!error) {
    const std::filesystem::path installed = exe.parent_path().parent_path() / "share" / "kernelarc";
    if (std::filesystem::exists(installed / "include" / "kernelarc" / "abi.h", error)) {
      return installed;
    }
  }
  return KERNELARC_SOURCE_DIR;
}

std::filesystem::path abi_include_dir() {
  return data_dir() / "include";
}

}  // namespace kernelarc
