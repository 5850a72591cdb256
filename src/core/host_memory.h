// What this machine's memory can give, read where kernelarc needs it: the warning before a search,
// the explanation of a process the kernel killed for memory, the oracle's bound on the tensors it
// keeps in memory.
#pragma once

#include <cstdint>
#include <optional>

namespace kernelarc {

/// This machine's physical memory in bytes; nullopt when it cannot be read.
std::optional<int64_t> physical_memory_bytes();

/// The memory this machine can give now (/proc/meminfo's MemAvailable, else the physical
/// memory), in bytes; nullopt when neither can be read.
std::optional<int64_t> available_host_memory();

}  // namespace kernelarc
