// What each function of the Python module does, over the library the CLI's commands use, with
// JSON results (the module turns them into Python objects). No Python here: these run with the
// GIL released.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "app/guard_session.h"
#include "app/optimize_session.h"
#include "python_module/loaded_target.h"

namespace kernelarc {

/// `kernelarc optimize` without a terminal: a new run, its progress as plain lines on stdout,
/// skills recorded unless flags.no_skills, the best solution written where the CLI writes it.
/// The run's summary as stored, plus "run_id", "problem", "device", "winner", "solution_dir" and
/// "workloads" (per workload: its axes, the best's and the baseline's times and the speedup).
nlohmann::json optimize_problem(OptimizeFlags flags);

/// `kernelarc eval`: the traces of `--json` (diagnosed), its report printed only when `report`.
OrderedJson evaluate_solution(const std::string& problem_dir, const std::string& solution,
                              const GuardFlags& flags, bool report);

/// `kernelarc runs`: a row per run of the workspace.
nlohmann::json list_runs(const std::string& workspace);

/// The target's solution in the torch-extension form (app/solution_export.h), as solution.json;
/// destination-passing unless `value_returning`.
OrderedJson export_torch_json(const LoadedTarget& loaded, bool value_returning,
                              const std::string& name);

}  // namespace kernelarc
