// The `_kernelarc` extension: the CLI's commands as Python functions (optimize, eval, runs,
// load, export_torch) returning the JSON the CLI writes, as Python objects. The library starts
// worker processes and an oracle interpreter that, under the CLI, are itself and the detected
// Python; here they are the kernelarc executable and the importing interpreter
// (python_module/host_programs.h).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "core/error.h"
#include "python_module/host_programs.h"
#include "python_module/library_calls.h"

namespace py = pybind11;

namespace kernelarc {

namespace {

py::object to_python(const std::string& json_text) {
  return py::module_::import("json").attr("loads")(json_text);
}

/// None, one uuid prefix (or "largest"), or a list of them.
std::vector<std::string> workload_selection(const py::object& workloads) {
  if (workloads.is_none()) return {};
  if (py::isinstance<py::str>(workloads)) return {workloads.cast<std::string>()};
  try {
    return workloads.cast<std::vector<std::string>>();
  } catch (const py::cast_error&) {
    throw InputError("workloads: expected None, a uuid prefix (or \"largest\") or a list of them");
  }
}

GuardFlags guard_flags(const std::string& device, const std::string& workspace,
                       const py::object& workloads, const std::optional<std::string>& python) {
  GuardFlags flags;
  flags.device = device;
  flags.workspace = workspace;
  flags.workloads = workload_selection(workloads);
  flags.python = oracle_python(python.value_or(""),
                               py::module_::import("sys").attr("executable").cast<std::string>());
  flags.worker_executable = worker_executable();
  return flags;
}

std::string agents_text(const py::object& agents) {
  if (agents.is_none()) return OptimizeFlags{}.agents;
  if (py::isinstance<py::int_>(agents)) return std::to_string(agents.cast<int>());
  if (py::isinstance<py::str>(agents)) return agents.cast<std::string>();
  try {
    std::string list;
    for (const std::string& name : agents.cast<std::vector<std::string>>())
      list += (list.empty() ? "" : ",") + name;
    return list;
  } catch (const py::cast_error&) {
    throw InputError("agents: expected None, a count (1-6) or a list of strategy names");
  }
}

py::object optimize(const std::string& problem, int64_t budget, const std::string& device,
                    const std::string& workspace, const py::object& workloads,
                    const py::object& agents, std::optional<uint64_t> seed,
                    std::optional<std::string> policy, std::optional<std::string> python,
                    int cpu_workers, std::optional<double> wall_time,
                    std::optional<std::string> baseline, std::optional<std::string> out,
                    bool no_skills, std::optional<int> trials, std::optional<int> search_trials,
                    bool no_baseline) {
  OptimizeFlags flags;
  flags.problem_dir = problem;
  flags.budget = budget;
  flags.guard = guard_flags(device, workspace, workloads, python);
  flags.agents = agents_text(agents);
  if (seed) flags.seed = *seed;
  if (policy) flags.policy = *policy;
  flags.cpu_workers = cpu_workers;
  if (wall_time) flags.wall_time_s = *wall_time;
  if (baseline) flags.baseline = *baseline;
  if (out) flags.out = *out;
  flags.no_skills = no_skills;
  if (trials) flags.guard.trials = *trials;
  if (search_trials) flags.search_trials = *search_trials;
  flags.guard.no_baseline = no_baseline;
  nlohmann::json result;
  {
    py::gil_scoped_release release;
    result = optimize_problem(std::move(flags));
  }
  return to_python(result.dump());
}

py::object eval(const std::string& problem, const std::string& solution, const std::string& device,
                const std::string& workspace, const py::object& workloads,
                std::optional<std::string> python, std::optional<int> trials, bool no_baseline,
                bool report) {
  GuardFlags flags = guard_flags(device, workspace, workloads, python);
  if (trials) flags.trials = *trials;
  flags.no_baseline = no_baseline;
  OrderedJson traces;
  {
    py::gil_scoped_release release;
    traces = evaluate_solution(problem, solution, flags, report);
  }
  return to_python(traces.dump());
}

py::object runs(const std::string& workspace) {
  return to_python(list_runs(workspace).dump());
}

/// A run id may come as an int.
std::string target_text(const py::object& target) {
  if (py::isinstance<py::int_>(target)) return std::to_string(target.cast<int64_t>());
  if (py::isinstance<py::str>(target) || py::hasattr(target, "__fspath__"))
    return py::str(py::module_::import("os").attr("fspath")(target)).cast<std::string>();
  throw InputError("target: expected a run id, \"latest\" or a solution path");
}

py::object load(const py::object& target, const std::string& workspace,
                std::optional<std::string> problem) {
  OrderedJson loaded =
      loaded_target_to_json(load_target(target_text(target), workspace, problem.value_or("")));
  // So that what load() returned can be handed back (kernelarc.torch.compile_op) on its own.
  loaded["workspace"] = workspace;
  return to_python(loaded.dump());
}

py::object export_torch(const py::object& target, const std::string& workspace,
                        std::optional<std::string> problem, bool value_returning,
                        std::optional<std::string> name) {
  const LoadedTarget loaded = load_target(target_text(target), workspace, problem.value_or(""));
  return to_python(export_torch_json(loaded, value_returning, name.value_or("")).dump());
}

}  // namespace

}  // namespace kernelarc

PYBIND11_MODULE(_kernelarc, module) {
  using namespace kernelarc;
  using py::arg;
  module.doc() = "kernelarc's library: optimize, eval, runs, load, export_torch";
  // InputError is bad input (a file, field or argument, named in the message); other errors
  // keep pybind11's mapping of std::exception to RuntimeError.
  py::register_exception_translator([](std::exception_ptr error) {
    try {
      if (error) std::rethrow_exception(error);
    } catch (const InputError& input) {
      PyErr_SetString(PyExc_ValueError, input.what());
    }
  });
  const OptimizeFlags defaults;
  const auto none = py::none();
  module.def("optimize", &optimize, arg("problem"), py::kw_only(), arg("budget") = defaults.budget,
             arg("device") = defaults.guard.device, arg("workspace") = defaults.guard.workspace,
             arg("workloads") = none, arg("agents") = none, arg("seed") = none,
             arg("policy") = none, arg("python") = none, arg("cpu_workers") = defaults.cpu_workers,
             arg("wall_time") = none, arg("baseline") = none, arg("out") = none,
             arg("no_skills") = defaults.no_skills, arg("trials") = none,
             arg("search_trials") = none, arg("no_baseline") = false,
             "Runs `kernelarc optimize` on a problem directory; returns the run's summary.");
  module.def("eval", &eval, arg("problem"), arg("solution"), py::kw_only(),
             arg("device") = defaults.guard.device, arg("workspace") = defaults.guard.workspace,
             arg("workloads") = none, arg("python") = none, arg("trials") = none,
             arg("no_baseline") = false, arg("report") = false,
             "Evaluates a solution through the guard; returns the traces `eval --json` writes.");
  module.def("runs", &runs, arg("workspace") = defaults.guard.workspace,
             "The runs of a workspace, as `kernelarc runs` lists them.");
  module.def("load", &load, arg("target"), py::kw_only(),
             arg("workspace") = defaults.guard.workspace, arg("problem") = none,
             "A run's winner (id or \"latest\") or a solution path, with its definition.");
  module.def("export_torch", &export_torch, arg("target"), py::kw_only(),
             arg("workspace") = defaults.guard.workspace, arg("problem") = none,
             arg("value_returning") = false, arg("name") = none,
             "The target's solution as a pybind11 torch extension exposing run(...).");
  module.def(
      "worker_executable", [] { return worker_executable().string(); },
      "The kernelarc executable that hosts the guard's workers.");
}
