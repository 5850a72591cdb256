// Runs python/kernelarc_oracle.py: finds an interpreter that can import torch, hands it a job
// file, watches its progress and turns its results file into one outcome per job.
//
// Job file (JSON): {definition: <path of a definition in the parsed form below>, problem_dir,
// device, results: <path>, jobs: [{id, workload, axes, trial, seed, inputs_out, expected_out,
// inputs_in, shared?: {names, seed, path, workload, axes}}],
// timing: [{id, workload, axes, baseline: "eager"|"compiled", warmup, iterations, seed, out}]}.
// `axes` holds every resolved axis value, so the script never evaluates axis expressions.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/problem.h"
#include "oracle/draw_progress.h"
#include "oracle/oracle.h"
#include "oracle/oracle_server.h"

namespace kernelarc {

struct PythonTrialJob {
  std::string id;
  const Workload* workload = nullptr;
  int trial = 0;
  uint64_t seed = 0;
  std::filesystem::path inputs_out;
  std::filesystem::path expected_out;
  /// Set: the inputs are read from this file instead of drawn (inputs_out is then not written).
  std::filesystem::path inputs_in;
  /// The workload's shared parameters (oracle/shared_parameters.h): drawn as shared_source
  /// draws from shared_seed, or read from shared_path when it exists, else written there;
  /// neither inputs file holds them.
  std::vector<std::string> shared;
  uint64_t shared_seed = 0;
  std::filesystem::path shared_path;
  const Workload* shared_source = nullptr;
};

struct PythonTimingJob {
  std::string id;
  const Workload* workload = nullptr;
  Baseline baseline = Baseline::Eager;
  int warmup = 0;
  int iterations = 1;
  int min_iterations = 1;
  double timing_budget_s = 0;  ///< 0: every one of `iterations`
  double warmup_limit_s = 0;   ///< 0: none
  uint64_t seed = 0;
  std::filesystem::path out;
};

struct PythonJobOutcome {
  bool ok = false;
  std::string error;
  /// False when the failure lies outside the reference (a missing blob, a lost report), so it
  /// must not be cached.
  bool cacheable = true;
};

/// The definition as the script reads it: name, op_type, inputs and outputs in definition order
/// ({shape: [axis names] | null, dtype, description}), reference, custom_inputs_entrypoint.
OrderedJson definition_to_job_json(const Definition& definition);

/// The interpreters to try, in order, when `configured` (the oracle's python option) names the
/// one to use or is empty: it alone when set, else $KERNELARC_PYTHON alone when set (an explicit
/// choice that fails is reported, never replaced), else python3 and /usr/bin/python3. `origin`
/// says which rule chose them, for the message when none can import torch.
std::vector<std::string> python_candidates(const std::string& configured, std::string& origin);

/// The content hash of the oracle script and its modules; part of the cache key of every
/// Python-made entry, so a changed generator never serves stale tensors.
const std::string& oracle_script_version();

class PythonBridge {
 public:
  PythonBridge(std::string python, std::string device, std::chrono::seconds job_timeout);

  /// Runs every job, normally in one process. A job during which the interpreter dies or stalls
  /// for job_timeout fails alone; the remaining jobs go to a fresh interpreter. Trial jobs run in
  /// an interpreter kept for this bridge's later trial jobs of the same problem (OracleServer);
  /// timing jobs get fresh interpreters, as a baseline is timed in a process of its own. Throws
  /// InputError when no interpreter can import torch or the device is unavailable, InternalError
  /// when the script fails outside any job, Interrupted when a stop request (stop_on) ended the
  /// interpreter. `scratch_dir` is created and removed. `observer`, when given, hears of each job
  /// as the script starts and ends it.
  std::map<std::string, PythonJobOutcome> run(const Problem& problem,
                                              const std::vector<PythonTrialJob>& trials,
                                              const std::vector<PythonTimingJob>& timings,
                                              const std::filesystem::path& scratch_dir,
                                              JobObserver* observer = nullptr);

  /// Once `stop` holds a signal number, the watchdog ends the interpreter at work as it ends one
  /// that made no progress, and run() and description() throw Interrupted instead of reporting
  /// the jobs it cut short; none is started after that. nullptr: never.
  void stop_on(const std::atomic<int>* stop) { stop_ = stop; }

  /// "python 3.11.2, torch 1.13.0 (cpu)"; starts the interpreter once if none ran yet (throws
  /// InputError like run).
  std::string description(const std::filesystem::path& scratch_dir);
  bool used() const { return !environment_.empty(); }
  /// The interpreter that imported torch ("" until run or description found one).
  const std::string& interpreter() const { return interpreter_; }
  /// Interpreter runs that imported torch (failed detection attempts are not counted).
  int runs() const { return runs_; }

 private:
  struct Launch;
  /// `served_problem`: nullopt runs the job file in an interpreter of its own; otherwise in the
  /// kept one, which serves one problem (this key) or, while it has served none, any ("").
  /// `on_poll` is called whenever the watchdog looks at the results file.
  Launch launch(const std::filesystem::path& job_file, const std::filesystem::path& results,
                const std::filesystem::path& log, const std::optional<std::string>& served_problem,
                const std::function<void()>& on_poll);
  Launch launch_with(const std::string& interpreter, const std::filesystem::path& job_file,
                     const std::filesystem::path& results, const std::filesystem::path& log,
                     const std::optional<std::string>& served_problem,
                     const std::function<void()>& on_poll);
  /// The kept interpreter for this interpreter path and problem key, started when there is
  /// none: a reference's module state never leaks into another problem's draws.
  OracleServer& server_for(const std::string& interpreter, const std::string& problem,
                           const std::filesystem::path& log_dir);
  std::vector<std::string> candidates(std::string& origin) const;
  /// The signal stop_on's flag holds; 0 while none.
  int stop_signal() const;

  std::string python_;
  std::string device_;
  std::chrono::seconds job_timeout_;
  const std::atomic<int>* stop_ = nullptr;
  std::string interpreter_;  ///< the one that worked, once known
  std::string environment_;  ///< its description, once known
  int runs_ = 0;
  std::unique_ptr<OracleServer> server_;
  std::string server_problem_;  ///< the problem key it serves; "" while it has served none
};

}  // namespace kernelarc
