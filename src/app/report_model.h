// What `kernelarc report` shows, gathered from where kernelarc keeps it: a run's candidates,
// evaluations, board and summary in the workspace, or a bench directory's bench.json. The
// result is the model app/report_html.h renders; nothing here formats HTML.
#pragma once

#include <cstdint>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "store/workspace.h"

namespace kernelarc {

/// Run `run_id` of the workspace: its facts; every candidate in proposal order with its status,
/// time, speedup over the run's baseline, parent and roofline point (FLOPs and bytes from its
/// diagnosis at the largest workload); the calibrated roof; the winner's side-by-side times
/// against the baseline, eager and torch.compile per workload; the board's conclusions; the
/// winner's code with a diff to its parent's; its diagnosis. A run still going or stopped is
/// reported as far as it got. InputError when the workspace has no such run.
nlohmann::json run_report_model(Workspace& workspace, int64_t run_id);

/// A `kernelarc bench` output directory: a row per problem with its speedup interval and a group
/// of bars (eager, torch.compile, cuBLASLt, kernelarc) per problem and workload. InputError naming
/// the file when bench.json is missing or not what bench writes.
nlohmann::json bench_report_model(const std::filesystem::path& bench_dir);

}  // namespace kernelarc
