// What a search may spread its measurements over on this host: the devices of a kind
// ("cuda:all") and the CPU cores this process may run on (split among CPU workers).
#pragma once

#include <string>
#include <vector>

#include "core/device_kind.h"

namespace kernelarc {

/// The devices of `kind` this process can use, as --device names them ("cpu"; "cuda:0",
/// "cuda:1", ...); empty without one. For CUDA it initializes the driver in this process.
std::vector<std::string> usable_devices(DeviceKind kind);

/// The cores this process may run on (its affinity mask), ascending.
std::vector<int> usable_cpus();

}  // namespace kernelarc
