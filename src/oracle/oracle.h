// The oracle: for each (workload, trial) of a problem, the input tensors and the expected
// outputs, produced once and cached as safetensors files; and the reference's own timings (the
// baselines that speedups and SOL scores are measured against).
//
// A problem's reference is either its PyTorch `reference` (run by python/kernelarc_oracle.py
// in one Python process per batch of missing entries) or, when the definition names one under
// kernelarc.native_reference, a compiled C++ solution run in an isolated worker with inputs
// generated in C++. Python never runs while candidates are measured: the guard only reads the
// cache.
//
// Cache layout: <cache_dir>/<problem name>/<key>.{inputs,expected}.safetensors, <key>.error.json
// for a reference that failed, <key>.timing.json for a baseline. Every file is written
// atomically; an entry counts only when its expected file exists, which is written last.
// A workload whose inputs exceed OracleOptions::shared_parameter_bytes draws its parameters
// (large drawn inputs of const-axis shape: weights) once per problem, into
// <key>.parameters.safetensors, shared by the trials of every workload that shares them; each
// trial's inputs file then holds only the fresh activations (oracle/shared_parameters.h).
// inputs() always returns every input.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/device_kind.h"
#include "core/problem.h"
#include "core/tensor.h"
#include "oracle/draw_progress.h"
#include "oracle/tensor_memo.h"
#include "oracle/trial_inputs.h"

namespace kernelarc {

enum class Baseline { Eager, Compiled };  ///< PyTorch eager / torch.compile

/// Fresh interpreters a baseline is timed in, the fastest kept (oracle/baseline_processes.h).
inline constexpr int kBaselineProcesses = 2;

/// The trial index of the twin of trial 0 (oracle/input_twin.h): trial 0's inputs with one
/// element of every floating tensor changed, and the reference's outputs for them.
inline constexpr int kTwinTrial = -1;

/// "eager" or "compiled".
std::string_view baseline_name(Baseline baseline);

struct OracleOptions {
  std::filesystem::path cache_dir;  ///< e.g. <workspace>/oracle
  /// Empty = detect: $KERNELARC_PYTHON (then only it), else `python3` on PATH, then
  /// /usr/bin/python3: the first that can `import torch`.
  std::string python;
  DeviceKind device = DeviceKind::Cpu;  ///< where PyTorch runs the reference and makes inputs
  uint64_t seed = 200;
  int warmup = 3;       ///< baseline timing
  int iterations = 20;  ///< timed calls at most
  /// Fewer timed calls where `iterations` would outlast this many seconds (the guard's rule for
  /// candidates), but at least min_iterations.
  double timing_budget_s = 2.0;
  int min_iterations = 10;
  /// A baseline whose warm-up calls (torch.compile's compilation included) outlast this is
  /// reported unavailable, so that one pathological compile cannot hold a session.
  double warmup_limit_s = 300;
  /// A Python job (one trial or one timing) that makes no progress for this long is killed and
  /// reported as a reference error; the remaining jobs continue in a fresh interpreter.
  std::chrono::seconds job_timeout{600};
  /// The kernelarc executable that hosts native-reference workers; empty = this process's.
  std::filesystem::path worker_executable;
  /// Trial tensors kept in memory between reads; 0 = TensorMemo::default_max_bytes().
  std::size_t memory_cache_bytes = 0;
  /// The cache on disk is kept within this many bytes by dropping other problems' draws, least
  /// recently prepared first (oracle/oracle_cache_bound.h); 0 = a quarter of its file system.
  std::uintmax_t max_cache_bytes = 0;
  /// Above this many bytes of tensor inputs per draw, a workload's parameters are drawn once per
  /// problem and shared by the trials (oracle/shared_parameters.h); 0 = every trial draws all.
  std::uint64_t shared_parameter_bytes = std::uint64_t{256} << 20;
};

struct ReferenceTiming {
  Baseline baseline = Baseline::Eager;
  /// By the clock candidates are timed with: on CUDA the GPU span of everything the call
  /// launched (CUPTI through torch.profiler); on the CPU the wall time of the call.
  std::vector<double> times_ns;
  /// CUDA only: CUDA events around the Python call, launch gaps included (what a PyTorch user
  /// measures end to end); empty elsewhere.
  std::vector<double> end_to_end_ns;
  /// How it was measured, e.g. "eager, CUDA events, L2 flushed (100 MiB written)".
  std::string note;
};

class NativeReference;
class PythonBridge;
struct PythonTimingJob;

class Oracle {
 public:
  explicit Oracle(OracleOptions options);
  ~Oracle();
  Oracle(const Oracle&) = delete;
  Oracle& operator=(const Oracle&) = delete;

  /// Ensures trials [0, trials) of every workload (or of `only`, when given: an evaluation of a
  /// few workloads need not draw for the others) are cached, running at most one Python
  /// process for everything missing (so torch is imported once). A reference that fails on a
  /// workload does not throw: reference_error() reports it. Throws InputError if no usable
  /// Python/torch is found (the message says what was tried and how to set KERNELARC_PYTHON)
  /// and the problem has no native reference.
  void prepare(const Problem& problem, int trials, std::span<const Workload* const> only = {});
  /// Whether the twin of trial 0 exists for this workload; prepare() makes it wherever
  /// twin_applies() and the reference succeeds on it. Read it with kTwinTrial.
  bool has_twin(const Problem& problem, const Workload& workload) const;
  /// Why the reference failed on this workload (on any trial prepared so far, else trial 0).
  std::optional<std::string> reference_error(const Problem& problem,
                                             const Workload& workload) const;

  /// Inputs by definition name (scalars as 0-D tensors of their declared dtype) and expected
  /// outputs by output name; a missing entry is prepared first. Throws InputError naming the
  /// cache file if it is corrupt (the entry is then deleted so the next prepare regenerates
  /// it), and InputError with the reference's message if the reference failed on this trial.
  /// Served from memory when read recently (see OracleOptions::memory_cache_bytes).
  std::shared_ptr<const TrialInputs> inputs(const Problem& problem, const Workload& workload,
                                            int trial);
  std::shared_ptr<const TensorMap> expected(const Problem& problem, const Workload& workload,
                                            int trial);

  /// Times the reference on the oracle's device with the inputs of trial 0, cached like the
  /// trials. A Python baseline missing for one workload is measured for every workload of the
  /// problem that lacks it, in one process. nullopt when the baseline is unavailable;
  /// timing_unavailable_reason() then says why ("torch.compile unavailable: torch 1.13.0").
  std::optional<ReferenceTiming> reference_timing(const Problem& problem, const Workload& workload,
                                                  Baseline baseline);
  /// reference_timing() measured afresh for each of `workloads` and `baselines` (Python: all in
  /// one process), neither reading nor writing the cache: for re-measurements interleaved with
  /// candidates, where a timing cached at another hour would not be side by side. By baseline,
  /// then workload uuid; a baseline unavailable or failed on a workload is absent there
  /// (reference_timing() and timing_unavailable_reason() say why). `processes` fresh
  /// interpreters, the fastest kept (baseline_processes.h); a caller that repeats the
  /// measurement in rounds may ask for one each and keep the fastest round itself.
  std::map<Baseline, std::map<std::string, ReferenceTiming>> measure_reference_timings(
      const Problem& problem, const std::vector<Workload>& workloads,
      const std::vector<Baseline>& baselines, int processes = kBaselineProcesses);
  /// Why reference_timing() returned nullopt for this baseline (empty when it did not).
  std::string timing_unavailable_reason(const Problem& problem, const Workload& workload,
                                        Baseline baseline) const;

  /// "python 3.11.2, torch 1.13.1 (cpu)" or "native reference" (both, joined by "; ", when
  /// this oracle served problems of both kinds). May start Python once to find out.
  std::string description() const;

  /// How many Python processes with torch this oracle has run (failed detection attempts
  /// are not counted): a fully cached problem costs none.
  int python_runs() const;

  /// Where prepare() says, a workload at a time, what the PyTorch reference draws and how long
  /// that took (oracle/draw_progress.h); empty: nowhere.
  void report_progress(ProgressLines lines) { progress_ = std::move(lines); }
  /// Where the PyTorch reference's draws and timings look for a stop request (cli/interrupt.h):
  /// once `stop` holds a signal number, the Python process at work is ended and the call throws
  /// Interrupted. What it cut short is neither cached nor recorded as the reference's failure,
  /// so the next call draws it again; what was drawn before stays cached. nullptr: never.
  void stop_on(const std::atomic<int>* stop);

 private:
  struct Entry;
  using Missing = std::pair<const Workload*, int>;  ///< (workload, trial)

  Entry entry(const Problem& problem, const Workload& workload, int trial) const;
  std::filesystem::path problem_cache_dir(const Problem& problem) const;
  std::filesystem::path timing_path(const Problem& problem, const Workload& workload,
                                    Baseline baseline) const;
  /// What produced an entry (script version, or native generator + reference solution).
  std::string mode_tag(const Problem& problem) const;
  NativeReference& native(const Problem& problem) const;

  void generate(const Problem& problem, const std::vector<Missing>& missing);
  void generate_python(const Problem& problem, const std::vector<Missing>& missing);
  void generate_native(const Problem& problem, const std::vector<Missing>& missing);
  /// Twins of trial 0 for the workloads that lack one; a twin that cannot be made or that the
  /// reference fails on is recorded in its entry's error file only (the workload stays usable).
  void generate_twins(const Problem& problem, const std::vector<const Workload*>& workloads);
  void record_error(const Problem& problem, const Workload& workload, int trial,
                    const std::string& message, bool cache);
  /// A trial's expected outputs, or its drawn inputs (without the shared parameters).
  std::shared_ptr<const TensorMap> read_entry(const Problem& problem, const Workload& workload,
                                              int trial, const Entry& cached, bool want_inputs);
  /// The shared parameters of an entry that has some (Entry::parameters), read once into the
  /// memo; a corrupt file is deleted (its trials then count as missing) and reported.
  std::shared_ptr<const TensorMap> read_parameters(const Problem& problem, const Workload& workload,
                                                   const Entry& entry);
  void time_python(const Problem& problem, Baseline baseline);
  /// A timing job under this oracle's protocol (warm-up, iterations, budget, warm-up limit).
  PythonTimingJob python_timing_job(std::string id, const Workload& workload, Baseline baseline,
                                    std::filesystem::path out) const;
  /// Writes the timing (or why there is none) to `path`.
  void time_native(const Problem& problem, const Workload& workload, Baseline baseline,
                   const std::filesystem::path& path);

  OracleOptions options_;
  std::unique_ptr<PythonBridge> python_;
  /// Loaded lazily, also from const lookups (a cache key needs the solution's content).
  mutable std::map<std::string, std::unique_ptr<NativeReference>> natives_;
  /// Reference errors seen by this oracle, by problem + workload uuid.
  std::map<std::string, std::string> errors_;
  bool used_native_ = false;
  TensorMemo memo_;
  ProgressLines progress_;
};

}  // namespace kernelarc
