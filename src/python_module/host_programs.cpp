#include "python_module/host_programs.h"

#include <cstdlib>

#include <fmt/format.h>

#include "core/error.h"

namespace kernelarc {

std::filesystem::path worker_executable() {
  if (const char* env = std::getenv("KERNELARC_EXECUTABLE"); env != nullptr && *env != '\0') {
    if (!std::filesystem::is_regular_file(env))
      throw InputError(fmt::format(
          "KERNELARC_EXECUTABLE={}: expected the path of the kernelarc executable", env));
    return env;
  }
  // Set by src/python_module/CMakeLists.txt: the executable built in the same tree.
  const std::filesystem::path built = KERNELARC_BUILT_EXECUTABLE;
  if (!std::filesystem::is_regular_file(built))
    throw InputError(fmt::format(
        "the kernelarc executable this module was built with ({}) is missing: build the target "
        "`kernelarc`, or set KERNELARC_EXECUTABLE to the path of one",
        built.string()));
  return built;
}

std::string oracle_python(const std::string& requested, const std::string& importing) {
  if (!requested.empty()) return requested;
  if (const char* env = std::getenv("KERNELARC_PYTHON"); env != nullptr && *env != '\0') return "";
  return importing;
}

}  // namespace kernelarc
