// `kernelarc optimize`'s engine: agents with their strategies, trees and policies propose
// candidates into one queue; an EvaluationPool measures up to `in_flight` of them at once (one
// evaluator alone measures one at a time), while the queued ones compile ahead on a thread per
// core. Every proposal is written to the workspace before it is queued and every evaluation
// as soon as it finishes, in whatever order, so a killed run loses no finished evaluation and
// resumes where it stopped.
//
// Determinism: results are applied to the agents, the bandit and the board in the order the
// candidates were proposed, one before each new proposal, and the queue is full whenever an agent
// proposes. So which agent proposes next (a seeded bandit), what it proposes (its seeded policy)
// and which results it has seen when it does (all but those of the window()-1 newest candidates)
// depend only on the seed, `build_ahead`, `in_flight`, `synthesis_parallel` and the results, never
// on timing, on the order evaluations finish in or on the order a code synthesizer answers in:
// its requests are made when the candidate is proposed, from applied results only, and run on
// threads of their own while the search goes on. With one evaluation in flight a run is the serial
// one; with several, which device measures which candidate, and so the noise on each result, is up
// to timing (the stored evaluation says where it ran). A resumed run replays the stored candidates
// and results through the same steps, checks that each proposal equals the stored one, and
// carries on with the same trees, budget and board.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "codesynth/code_synthesizer.h"
#include "optimize/evaluation_pool.h"
#include "optimize/evaluator.h"
#include "optimize/measurement.h"
#include "optimize/shared_view.h"
#include "optimize/skill_hint.h"
#include "search/tree_shape.h"
#include "store/workspace.h"
#include "synth/bound_template.h"

namespace kernelarc {

struct OptimizeOptions {
  int64_t budget = 64;  ///< search candidates evaluated (the baseline and finals not counted)
  std::vector<std::string> agents{"explore", "memory",  "parallelism",
                                  "compute", "library", "fusion"};
  std::string policy = "mcts";
  uint64_t seed = 1;
  int plateau = 8;      ///< an agent drafts a new start after this many flat results
  int build_ahead = 0;  ///< candidates compiled ahead of the ones being measured
  /// Evaluations kept in flight (a pool's capacity when the run started). A resumed run keeps
  /// its stored value, so that it proposes as before on a pool of any size.
  int in_flight = 1;
  double min_gain = 0.01;    ///< an improvement must exceed the noise and this relative gain
  int final_candidates = 3;  ///< re-measured side by side at the end (with the baseline)
  int final_rounds = 3;      ///< interleaved rounds of that re-measurement
  std::optional<double> wall_time_s;  ///< stop proposing after this long (this process)
  /// With a code synthesizer: the odds that a move from a template node asks for code instead,
  /// how often a failed program goes back with its error, and the run's caps on what the
  /// synthesizer may spend (the run stops proposing once one is reached).
  double code_share = 0.5;
  int repair_rounds = 1;
  std::optional<int64_t> max_synthesis_tokens;
  std::optional<double> max_synthesis_cost_usd;
  /// Requests to the code synthesizer running at once (an LLM answers in seconds to minutes):
  /// with a synthesizer, the queue holds at least this many candidates, so that as many agents'
  /// requests are out together while the devices measure. A synthesis budget may then be passed
  /// by up to this many requests less one, those already asked when it is reached.
  int synthesis_parallel = 4;

  /// Candidates queued at once: those in flight, `build_ahead` compiling ahead and one more per
  /// extra evaluation in flight, so that one slow evaluation leaves the other devices work; with
  /// a code synthesizer, at least `synthesis_parallel`.
  int window(bool synthesizing) const {
    const int measuring = build_ahead + 2 * in_flight - 1;
    return synthesizing ? std::max(measuring, synthesis_parallel) : measuring;
  }

  nlohmann::json to_json() const;
  /// InputError naming `where` and the field on a bad value.
  static OptimizeOptions from_json(const nlohmann::json& json, const std::string& where);
};

/// What the orchestrator searches over for one problem.
struct OptimizeTarget {
  const Problem* problem = nullptr;
  std::vector<const BoundTemplate*> templates;  ///< every template serving the problem
  /// Writes whole programs (an LLM, a command), beside or instead of the templates; nullptr for
  /// none. Its candidates are labelled with its name().
  CodeSynthesizer* code_synthesizer = nullptr;
  std::string hardware;                ///< the device in words, for the synthesizer
  std::vector<std::string> knowledge;  ///< retrieved notes and skills, for the synthesizer
  std::map<std::string, std::string> extra_files;
  std::optional<Solution> baseline;  ///< the bundled solution speedups are measured against
  std::string workload_class;        ///< the evaluated workloads in words, for the board
  std::string device;                ///< "cpu" or "cuda:0", as stored with the run
  std::string largest_workload;      ///< uuid of the workload the live view shows
  std::vector<Workload> workloads;   ///< the evaluated workloads (--workloads selects them)
  /// Skills retrieved for this run (empty = a cold start); the caller stores them in
  /// run_config so that a resume starts from the same hints.
  std::vector<SkillHint> skill_hints;
  /// Stored in the run's config beside the options (the caller's settings, e.g. the guard's
  /// and the selected workloads, which a resume must reuse).
  nlohmann::json run_config = nlohmann::json::object();
};

struct CandidateEvent {
  int64_t seq = 0;
  int64_t candidate_id = 0;
  std::string agent;
  std::string label;  ///< template and point, or "baseline"
  Measurement measurement;
  std::optional<double> fitness;
  bool new_incumbent = false;
  bool replayed = false;          ///< read back from the store on --resume, not measured now
  double build_wait_seconds = 0;  ///< waiting for its compile before it was submitted
  double evaluation_seconds = 0;  ///< submitted to received (its compile too when not ahead)
  std::string where;              ///< where it was measured, when the pool says ("cuda:1")
};

struct AgentLine {
  std::string name;
  std::string strategy;
  int candidates = 0;
  std::optional<double> best_fitness;
  std::string last_board;  ///< its latest conclusion or redirect
};

struct ProgressView {
  int64_t run_id = 0;
  int64_t budget = 0;
  int64_t evaluated = 0;
  std::optional<double> best_fitness;
  std::optional<double> best_sol_fraction;
  std::optional<double> best_median_ms;             ///< of the largest workload
  std::optional<double> best_largest_sol_fraction;  ///< T_SOL / median there
  SynthesisTotals synthesis;  ///< what the code synthesizer spent so far (all zero without one)
  std::vector<AgentLine> agents;
  bool sol_bound_beaten = false;  ///< the best ran below T_SOL on some workload
};

/// What a run shows while it goes. message() may be called from any thread (the oracle's draw
/// lines come from whichever evaluator draws), so implementations serialize their output.
class ProgressSink {
 public:
  virtual ~ProgressSink() = default;
  virtual void candidate(const ProgressView& view, const CandidateEvent& event) = 0;
  virtual void message(const std::string& line) = 0;
};

struct Finalist {
  int64_t candidate_id = 0;
  std::string agent;
  std::string label;
  Solution solution;
  std::vector<Trace> traces;  ///< the last round's
  Measurement measurement;    ///< pooled over the rounds
  double fitness = 0;
};

struct LineageStep {
  int64_t candidate_id = 0;
  std::string agent;
  std::string operation;
  std::string changes;  ///< knob changes from its parent ("" for a start)
  std::string note;     ///< why its agent proposed it, when it knows ("" otherwise)
};

/// "#9 memory diagnosis (VEC 4->8): raise VEC (...)": the candidate, its agent and operation,
/// its knob changes and its note; a note that starts with the operation's name ("diagnosis:
/// raise VEC ...") drops that repetition.
std::string lineage_step_text(const LineageStep& step);

struct OptimizeSummary {
  int64_t run_id = 0;
  std::string stop_reason;
  /// The signal that stopped the search (0: none): what it measured is stored, there are no
  /// finalists, and the run is left stopped, to be resumed.
  int interrupted_by = 0;
  int64_t evaluated = 0;
  int64_t passed = 0;
  std::optional<Finalist> baseline;  ///< re-measured with the finalists
  std::vector<Finalist> finalists;   ///< best first; [0] is the winner
  std::optional<Speedup> speedup;    ///< winner over the baseline, from the re-measurement
  /// The winner is slower than the baseline beyond noise (the speedup's interval lies below
  /// 1): the baseline stays the best solution, and best() is it.
  bool kept_baseline = false;
  std::vector<LineageStep> lineage;  ///< the winner's, root first
  std::vector<std::string> skipped_agents;
  std::vector<Conclusion> conclusions;  ///< the board's, in the order posted
  /// The winner's knob changes from its template's default point, when that route is faster
  /// beyond both intervals (both measured by the search's guard).
  std::optional<Conclusion> winner_route;
  SynthesisTotals synthesis;  ///< what the code synthesizer was asked and spent
  /// The search's throughput in this execution: the candidates measured now (not read back on
  /// --resume), on how many evaluators at once, in how long (first proposal to last result;
  /// the baseline and the finalists apart).
  int64_t measured = 0;
  std::size_t evaluators = 1;
  double search_seconds = 0;
  TreeShape tree_shape;  ///< the agents' search trees together

  /// The solution the run hands back: the winner, or the baseline when it was kept.
  /// Requires a winner.
  const Finalist& best() const { return kept_baseline ? *baseline : finalists.front(); }
};

class Orchestrator {
 public:
  /// Measures everything through `evaluator`, one candidate at a time.
  Orchestrator(OptimizeTarget target, CandidateEvaluator& evaluator, Workspace& workspace,
               OptimizeOptions options, ProgressSink& progress);
  /// Measures the search's candidates through `pool`, whose tickets are candidate ids (unique in
  /// the workspace); `evaluator` measures the baseline and the finalists, when nothing is in
  /// flight, and compiles ahead.
  Orchestrator(OptimizeTarget target, CandidateEvaluator& evaluator, EvaluationPool& pool,
               Workspace& workspace, OptimizeOptions options, ProgressSink& progress);
  ~Orchestrator();

  /// A new run; returns its summary (the run is then finished in the store).
  OptimizeSummary run();
  /// Continues a stored run of the same problem with its stored options: one left running by a
  /// process that is gone, or one stopped. Refuses a run whose process still runs.
  OptimizeSummary resume(int64_t run_id);
  /// The search stops, after the evaluations in flight, once `signal` holds a signal number
  /// (set by a signal handler: checking it is all the orchestrator does). An evaluation that
  /// throws Interrupted stops it the same way, with or without this flag.
  void stop_on(const std::atomic<int>& signal) { stop_ = &signal; }

 private:
  void check_options() const;
  OptimizeSummary execute(int64_t run_id);

  OptimizeTarget target_;
  CandidateEvaluator* evaluator_;
  std::unique_ptr<EvaluationPool> own_pool_;  ///< the evaluator's own when given no pool
  EvaluationPool* pool_;
  Workspace* workspace_;
  OptimizeOptions options_;
  ProgressSink* progress_;
  const std::atomic<int>* stop_ = nullptr;
};

/// What `kernelarc show` reads back: the finalists, the speedup, the lineage.
nlohmann::json summary_to_json(const OptimizeSummary& summary);

/// A problem's identity in the store: the content of its definition and the family and
/// parameters it is served as (recognition may give an unannotated definition a family and a
/// plan, and a newer kernelarc may lower the same definition differently). A resumed (or
/// reused) run must optimize the same computation the same way.
std::string problem_hash(const Problem& problem);

/// The stored options of a run (its config), for --resume.
OptimizeOptions stored_options(const Run& run);

}  // namespace kernelarc
