// `kernelarc report` and `optimize --report`: the model of a run or a bench directory rendered as
// one self-contained HTML file (app/report_model.h gathers, app/report_html.h renders).
#pragma once

#include <cstdint>
#include <filesystem>

#include "store/workspace.h"

namespace kernelarc {

/// Writes the report of run `run_id` to `out` (written whole or not at all), or, when `out` is
/// empty, to WORKSPACE/runs/ID/report.html; returns where it went.
std::filesystem::path write_run_report(Workspace& workspace, int64_t run_id,
                                       const std::filesystem::path& out = {});
/// Writes the report of the bench directory `bench_dir` (its bench.json) to `out`.
void write_bench_report(const std::filesystem::path& bench_dir, const std::filesystem::path& out);

}  // namespace kernelarc
