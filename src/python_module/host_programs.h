// The programs the library starts that, under the CLI, are the running process itself: inside
// Python /proc/self/exe is the interpreter, so the module names the kernelarc executable that
// hosts the guard's workers, and the interpreter that imported it for the oracle.
#pragma once

#include <filesystem>
#include <string>

namespace kernelarc {

/// $KERNELARC_EXECUTABLE, else the kernelarc executable this module was built beside; an
/// InputError saying how to point at one when neither exists.
std::filesystem::path worker_executable();

/// The interpreter the oracle runs: `requested` when given, else "" when $KERNELARC_PYTHON is
/// set (the oracle's own detection reads it, as under the CLI), else `importing` (sys.executable).
std::string oracle_python(const std::string& requested, const std::string& importing);

}  // namespace kernelarc
