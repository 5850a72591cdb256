// The environment of the oracle's Python: the one a tuned PyTorch user runs in. glibc's
// allocator returns large blocks to the kernel on free by default, and whether it stops doing
// so (its thresholds adapt) depends on the process' history: some processes then pay page
// faults for every 16 MB intermediate of every call. RMSNorm at 1025x4096 took 105-114 ms in
// such a process and 2.9 ms in the others; with the thresholds at 1 GiB, 2.6-4.0 ms in all.
#pragma once

#include <string>
#include <vector>

namespace kernelarc {

/// The thresholds set for the oracle's Python, 1 GiB each, as NAME=value.
inline constexpr const char* kOracleMallocSettings[] = {"MALLOC_MMAP_THRESHOLD_=1073741824",
                                                        "MALLOC_TRIM_THRESHOLD_=1073741824"};

/// This process' environment with kOracleMallocSettings added; a threshold the user set is kept.
std::vector<std::string> oracle_python_environment();

}  // namespace kernelarc
