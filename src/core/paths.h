// Where kernelarc finds its own data files (the oracle script, the ABI header).
#pragma once

#include <filesystem>

namespace kernelarc {

/// The data root: $KERNELARC_DATA_DIR if set; else <exe dir>/../share/kernelarc if it holds
/// include/kernelarc/abi.h; else the source tree the binary was built from.
std::filesystem::path data_dir();
/// data_dir()/include: the directory to put on a solution's include path.
std::filesystem::path abi_include_dir();
/// The running executable (from /proc/self/exe).
std::filesystem::path self_executable();

}  // namespace kernelarc
