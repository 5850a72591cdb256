// --profile, --ncu, --profile-timeout (and --profile-top) for `eval`, `templates try` and
// `optimize`.
#pragma once

#include <CLI/CLI.hpp>

#include "app/profile_best.h"

namespace kernelarc {

/// Registers --profile, --ncu and --profile-timeout; --profile-top too when `with_top`.
void add_profile_flags(CLI::App& command, ProfileFlags& flags, bool with_top);

}  // namespace kernelarc
