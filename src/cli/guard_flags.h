// The guard's flags, the same on every command that evaluates candidates (GuardFlags in
// app/guard_session.h holds their values).
#pragma once

#include <CLI/CLI.hpp>

#include "app/guard_session.h"

namespace kernelarc {

/// Registers --json, --workspace, --device, --python, --cflags, --workloads, --trials,
/// --warmup, --iterations, --timing-budget, --timeout-ms, --input-seed and --no-baseline. The
/// names are the same on every command: --budget and --seed belong to the search (`optimize`,
/// `bench`), so the guard's own budget (seconds) and seed say what they are.
void add_guard_flags(CLI::App& command, GuardFlags& flags);

}  // namespace kernelarc
