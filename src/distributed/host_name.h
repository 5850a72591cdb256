// This host's name, as workers and results streams are named after it.
#pragma once

#include <string>

namespace kernelarc {

/// gethostname(), or "localhost" where it fails.
std::string host_name();

}  // namespace kernelarc
