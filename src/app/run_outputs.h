// The files a finished optimization run hands back: the best solution (solution.json and its
// sources), its traces and the run's summary, in one directory (WORKSPACE/runs/ID by default).
#pragma once

#include <filesystem>

#include <nlohmann/json.hpp>

#include "optimize/orchestrator.h"

namespace kernelarc {

/// Writes solution.json, sources/, traces.json and summary.json of `best` under `dir`;
/// InputError naming a file that cannot be written.
void write_run_outputs(const std::filesystem::path& dir, const Finalist& best,
                       const nlohmann::json& summary);

}  // namespace kernelarc
