// What `kernelarc optimize` builds from its flags before the search starts, shared with
// `kernelarc bench`: the problem and its templates, the two guards (the search's screening one
// and the finalists' full one), the evaluator, the target with the config a run stores, and the
// orchestrator's options.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/code_synth_setup.h"
#include "app/guard_session.h"
#include "app/profile_best.h"
#include "app/recognize.h"
#include "app/search_devices.h"
#include "optimize/evaluation_pool.h"
#include "optimize/local_pool.h"
#include "optimize/orchestrator.h"
#include "optimize/search_setup.h"
#include "optimize/skill_distill.h"

namespace kernelarc {

/// What a pool of other hosts' workers needs from the session: the search guard's settings and
/// oracle, what it measures, and this host's devices, which measure beside the workers.
struct RemotePoolRequest {
  const Problem* problem = nullptr;
  const std::vector<Workload>* workloads = nullptr;
  GuardSession* search = nullptr;
  GuardFlags search_flags;
  std::string hardware;  ///< the run's device in words (its calibration's)
  std::vector<LocalEvaluationPool::Slot> local;
};

/// The search's defaults are OptimizeOptions' own (one place for each).
struct OptimizeFlags {
  std::string problem_dir;
  int64_t budget = OptimizeOptions{}.budget;
  std::string agents = std::to_string(OptimizeOptions{}.agents.size());
  std::string policy = OptimizeOptions{}.policy;
  uint64_t seed = OptimizeOptions{}.seed;
  std::string backend;
  /// --device as given when it may name several devices ("cuda:0,1", "cuda:all"); empty =
  /// guard.device alone. guard.device is then the first of them, the run's device.
  std::string devices;
  int cpu_workers = 1;  ///< evaluators sharing the CPU's cores, each timing on its own share
  std::string synth = "template";
  std::string resume;
  int plateau = OptimizeOptions{}.plateau;
  int build_ahead = -1;  ///< -1: chosen from the device (optimize_session.cpp)
  int final_candidates = OptimizeOptions{}.final_candidates;
  int final_rounds = OptimizeOptions{}.final_rounds;
  int search_trials = 3;
  bool no_skills = false;
  /// Leave out knob values that trade accuracy the reference keeps (SearchSetupOptions).
  bool keep_accuracy = false;
  double wall_time_s = 0;
  std::string out;
  std::string baseline;
  std::string root;
  std::vector<std::string> files;
  bool plain = false;
  /// Not a flag: `bench` sets it, since a problem no template serves still gets its baselines
  /// measured there (searchable() then says whether a search can run).
  bool allow_no_template = false;
  /// Not a flag: the pool of `--redis` (cli/optimize_command.cpp); empty = this host's devices
  /// alone.
  std::function<std::unique_ptr<EvaluationPool>(RemotePoolRequest)> remote_pool;
  GuardFlags guard;
  CodeSynthFlags code;
  ProfileFlags profile;
};

class OptimizeSession {
 public:
  /// `resumed`: the stored run whose guard settings, workloads and baseline replace the flags'.
  /// Loads and recognizes flags.problem_dir. InputError for unusable flags (naming the flag) or
  /// a problem nothing can search.
  OptimizeSession(OptimizeFlags flags, const Run* resumed);
  /// The same for a problem loaded and recognized already.
  OptimizeSession(OptimizeFlags flags, const Run* resumed, RecognizedProblem recognized);
  ~OptimizeSession();
  OptimizeSession(const OptimizeSession&) = delete;
  OptimizeSession& operator=(const OptimizeSession&) = delete;

  /// The flags in effect (a resumed run's guard settings, workloads and baseline applied).
  const OptimizeFlags& flags() const { return flags_; }
  const Problem& problem() const { return setup_->problem(); }
  /// How the problem's op_family was found (annotated, matched, fused or not served).
  const Recognition& recognition() const { return recognition_; }
  const std::vector<Workload>& workloads() const { return workloads_; }
  const OptimizeTarget& target() const { return target_; }
  const OptimizeOptions& options() const { return options_; }
  const SkillCondition& condition() const { return condition_; }
  /// The guard of the finalists' re-measurement (and its oracle).
  GuardSession& final_guard() { return *final_guard_; }
  /// A template or a code synthesizer serves the problem.
  bool searchable() const { return !target_.templates.empty() || code_ != nullptr; }

  /// What the run is about to do, in a line or two.
  std::string description() const;
  /// A new run (resume_id empty) or the stored one continued. `stop`, when given, stops it as
  /// Orchestrator::stop_on says.
  OptimizeSummary run(Workspace& workspace, ProgressSink& progress,
                      std::optional<int64_t> resume_id, const std::atomic<int>* stop = nullptr);

 private:
  /// The pool the search measures through: the evaluator alone on one device, else one
  /// evaluator per device (the guards and evaluators of the devices after the first); with
  /// flags.remote_pool, those devices beside other hosts' workers.
  void start_pool(const GuardFlags& search_flags, const std::string& hardware);

  OptimizeFlags flags_;
  Recognition recognition_;
  std::unique_ptr<SearchSetup> setup_;
  std::unique_ptr<CodeSynthSetup> code_;
  std::unique_ptr<GuardSession> search_;
  std::unique_ptr<GuardSession> final_guard_;
  std::vector<Workload> workloads_;
  OptimizeTarget target_;
  std::unique_ptr<GuardEvaluator> evaluator_;
  std::vector<SearchDevice> devices_;
  std::vector<std::unique_ptr<GuardSession>> device_guards_;
  std::vector<std::unique_ptr<GuardEvaluator>> device_evaluators_;
  std::unique_ptr<EvaluationPool> pool_;
  OptimizeOptions options_;
  SkillCondition condition_;
};

/// The guard's settings as a run stores them in its config ("guard").
nlohmann::json guard_config(const GuardFlags& flags, int search_trials);

}  // namespace kernelarc
