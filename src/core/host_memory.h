// What this machine's memory can give, read where kernelarc needs it: the warning before a search,
// the explanation of a process the kernel killed for memory.
#pragma once

#include <cstdint>
#include <optional>

namespace kernelarc {

/// The memory this machine can give now (/proc/meminfo's MemAvailable, else the physical
/// memory), in bytes; nullopt when neither can be read.
std::optional<int64_t> available_host_memory();

}  // namespace kernelarc
