// One execution of an optimize run (new or resumed): the state the orchestrator keeps between
// candidates and the phases that read and change it, each in a file of its own:
//   optimize_run.cpp            setup (agents, spaces), the store (candidate rows, evaluations,
//                               board) and the search loop
//   optimize_run_propose.cpp    the bandit's next agent, its proposal, code synthesis requests
//   optimize_run_queue.cpp      the baseline; the build-and-measure queue: submitting to the
//                               pool, storing results as they finish, applying them in order
//   optimize_run_view.cpp       what agents and the progress sink see; candidate lookups
//   optimize_run_finalists.cpp  the side-by-side re-measurement of the top candidates
//   optimize_run_summary.cpp    the winner's lineage and route, and the stored summary
// Every step that changes the store goes through this class, in the order the header of
// orchestrator.h promises (proposal and evaluation written before the next step).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "optimize/agent.h"
#include "optimize/orchestrator.h"
#include "optimize/task_pool.h"
#include "search/budget_bandit.h"

namespace kernelarc {

/// A node of an agent's tree: the agent's index and the node's id.
using NodeRef = std::pair<std::size_t, int>;

/// "template|point": a point measured once per run, whichever agent proposes it.
std::string point_key(const std::string& template_name, const KnobPoint& point);

class OptimizeRun {
 public:
  /// `stop`, when given, holds the number of a signal that asked the run to stop (0: none).
  OptimizeRun(const OptimizeTarget& target, CandidateEvaluator& evaluator, EvaluationPool& pool,
              Workspace& workspace, const OptimizeOptions& options, ProgressSink& progress,
              int64_t run_id, const std::atomic<int>* stop = nullptr);
  OptimizeRun(const OptimizeRun&) = delete;  // the agents' space lookup points at this object
  OptimizeRun& operator=(const OptimizeRun&) = delete;

  /// Measures the baseline, searches until a stop condition, re-measures the finalists and
  /// finishes the run in the store. Asked to stop, it skips the finalists and leaves the run
  /// stopped, to be resumed: between candidates, or sooner when an evaluation (the baseline's, a
  /// candidate's, a finalist's) throws Interrupted; that one is not recorded, and a resume
  /// measures it again.
  OptimizeSummary execute();

 private:
  /// A point of a template (or a program) proposed in this run, and its measurement once known.
  struct Known {
    int64_t candidate_id = 0;
    std::string agent;
    std::string template_name;
    KnobPoint point;
    std::optional<Measurement> measurement;
    std::vector<NodeRef> waiters;  // agent nodes that receive its result
  };
  /// A proposed candidate in the build-and-measure queue.
  struct Pending {
    int64_t seq = 0;
    int64_t candidate_id = 0;
    std::size_t agent = 0;
    int node = 0;
    std::string key;
    Solution solution;
    /// Set for a code candidate whose synthesizer gave no program: it is recorded as failed
    /// without an evaluation.
    std::optional<std::string> synthesis_failure;
    /// The synthesis failure was the transport's (no answer): kept out of recent failures.
    bool transport_failure = false;
    /// A code candidate whose program is being written: valid until the synthesizer's answer,
    /// which lands in `answer`, is taken (accept_program).
    std::future<void> program;
    std::shared_ptr<SynthesisOutcome> answer;
    SynthesisMove move = SynthesisMove::Draft;
    /// Its synthesis record, counted in the run's totals when its result is applied.
    std::optional<Synthesis> synthesis;
    std::future<void> build;
    bool submitted = false;
    /// Set once its evaluation finished (and was stored), or when read back from the store.
    std::optional<Measurement> measurement;
    bool replayed = false;
    std::string where;
    std::chrono::steady_clock::time_point submitted_at;
    double build_wait_seconds = 0;
    double evaluation_seconds = 0;
  };
  /// A per-shape dispatch of the top candidate, competing as one more finalist.
  struct DispatchEntry {
    int64_t candidate_id = 0;
    int64_t base_id = 0;
    std::size_t variants = 0;
    std::string plan;
  };

  // optimize_run.cpp: setup, the store, the search loop.
  void start_agents();
  void post(BoardKind kind, const std::string& agent, const std::string& text,
            const std::vector<int64_t>& evidence);
  int64_t candidate_for(const std::string& agent, std::optional<int64_t> parent,
                        std::vector<int64_t> inspired, const Solution* solution,
                        const std::string& template_name, const KnobPoint& point,
                        const std::string& note = "");
  /// The measurement stored for a candidate (a resumed run's), or nullopt.
  std::optional<Measurement> stored_measurement(int64_t candidate_id);
  void record_evaluation(int64_t candidate_id, const Measurement& measurement,
                         const std::vector<Trace>& traces, const std::string& where = "");
  /// Why the search stopped.
  std::string search();
  /// The signal that asked the run to stop (by the flag, or by an Interrupted caught); 0 while
  /// none has.
  int stop_signal() const;
  /// Runs `step`; an Interrupted it throws is noted as the stop it stands for. Whether `step`
  /// ran to its end.
  bool uninterrupted(const std::function<void()>& step);
  /// Receives and stores the evaluations in flight, and applies those next in order.
  void finish_in_flight();
  /// Why proposing must stop now, or nullopt.
  std::optional<std::string> stop_proposing(double elapsed_seconds) const;

  // optimize_run_propose.cpp
  std::optional<Pending> propose_next();
  /// The proposal's point already has a candidate: the agent's node shares its result.
  void share_known(Known& known, Agent& agent, std::size_t index, int node,
                   const std::string& template_name);
  SynthesisRequest synthesis_request(const Proposal& proposal, const Agent& agent,
                                     std::optional<int64_t> parent,
                                     const std::vector<int64_t>& inspired);
  void write_program(Pending& pending, const Proposal& proposal, const Agent& agent,
                     std::optional<int64_t> parent, const std::vector<int64_t>& inspired);
  /// Sends the request to the synthesizer on a thread of the request pool.
  void ask(Pending& pending, SynthesisRequest request);
  /// Takes a finished request's answer: stores the program (or the failure) and its record.
  void accept_program(Pending& pending);
  void add_synthesis_totals(const Synthesis& record);
  std::optional<std::string> synthesis_budget_spent() const;
  std::optional<CandidateContext> context_of(int64_t candidate_id);

  // optimize_run_queue.cpp
  void measure_baseline();
  /// Queues a proposal: read back when stored, recorded failed when it has no program, else
  /// compiled ahead when build_ahead allows.
  void enqueue(Pending pending);
  /// Records a candidate without a program as failed, or compiles it ahead when build_ahead
  /// allows; nothing for one already measured.
  void prepare_measurement(Pending& pending);
  /// Takes the programs the synthesizer has finished writing.
  void take_programs();
  /// Submits queued candidates with a program to the pool, oldest first, while it has room.
  void submit_ready();
  /// Waits for the pool's next finished evaluation, or briefly while programs are being written.
  void wait_for_work();
  /// Stores the pool's next finished evaluation (nothing when none finishes within `wait`, when
  /// given). One cut short by a stop request leaves its candidate proposed and unmeasured.
  void take_from_pool(std::optional<std::chrono::milliseconds> wait = std::nullopt);
  /// Stores a finished evaluation with its queued candidate.
  void receive(EvaluationPool::Done done);
  /// Applies a measured candidate's result to the trees, the bandit and the board.
  void complete(Pending& pending);
  void remember_failure(const Known& known, const Measurement& measurement);
  /// Whether the result is the run's new best; sets `gain` to its relative gain.
  bool update_incumbent(const CandidateResult& result, int64_t candidate_id, double& gain);
  /// Posts a conclusion when the node beat its parent beyond both intervals.
  void conclude_from_parent(const Agent& proposer, std::size_t agent_index, int node_id,
                            int64_t candidate_id, const Measurement& measurement);
  CandidateResult result_of(const Measurement& measurement, const std::string& template_name);
  void advise_from(const Measurement& best);

  // optimize_run_view.cpp
  ProgressView view() const;
  SharedView snapshot() const;
  bool is_code(const std::string& template_name) const;
  std::string label_of(const Known& known) const;
  const Known& known_of(int64_t candidate_id) const;
  std::optional<Solution> solution_of(int64_t candidate_id) const;
  std::optional<Measurement> measurement_of_candidate(int64_t candidate_id) const;

  // optimize_run_finalists.cpp
  /// The best candidates of the search by fitness, at most final_candidates, best first.
  std::vector<int64_t> ranked_candidates() const;
  std::optional<DispatchEntry> add_dispatch(int64_t top_id, std::vector<Finalist>& entries);
  void remeasure(std::vector<Finalist>& entries, std::size_t ranked, OptimizeSummary& summary);

  // optimize_run_summary.cpp
  void add_lineage(OptimizeSummary& summary, int64_t searched_winner,
                   const std::optional<DispatchEntry>& dispatch) const;
  std::optional<Conclusion> winner_route(int64_t searched_winner) const;
  OptimizeSummary summarize(const std::string& stop_reason);
  /// What the search itself did: the counts, no finalists.
  OptimizeSummary search_summary(const std::string& stop_reason) const;

  const OptimizeTarget& target_;
  CandidateEvaluator& evaluator_;
  EvaluationPool& pool_;
  Database& db_;
  ObjectStore& objects_;
  const OptimizeOptions& options_;
  ProgressSink& progress_;
  const int64_t run_id_;
  const std::atomic<int>* stop_;
  int interrupted_ = 0;  ///< the signal of an Interrupted an evaluation threw

  std::vector<Candidate> stored_;  ///< the run's stored candidates, replayed on --resume
  std::size_t board_stored_ = 0;
  std::size_t board_posted_ = 0;
  int64_t next_seq_ = 0;
  std::vector<std::unique_ptr<Agent>> agents_;
  std::vector<std::string> active_;  ///< the agents' names, in the order of agents_
  std::unique_ptr<BudgetBandit> bandit_;
  std::set<std::string> exhausted_;
  std::map<std::string, const BoundTemplate*> bound_;
  std::map<std::string, Known> known_;
  std::map<int64_t, std::string> key_of_candidate_;
  std::map<NodeRef, int64_t> candidate_of_node_;
  std::map<int64_t, NodeRef> node_of_candidate_;
  std::optional<std::map<std::string, double>> reference_;
  std::optional<Measurement> baseline_;
  int64_t baseline_candidate_ = 0;
  std::optional<int64_t> incumbent_;
  double incumbent_fitness_ = 0;
  double incumbent_noise_ = 0;
  std::vector<Conclusion> conclusions_;
  std::set<std::string> concluded_;
  std::map<std::string, std::string> last_board_;
  int64_t proposed_ = 0;
  int64_t evaluated_ = 0;
  int64_t passed_ = 0;
  int64_t measured_ = 0;  ///< evaluations received from the pool (not read back)
  double search_seconds_ = 0;
  std::deque<Pending> queue_;
  std::size_t in_flight_ = 0;           ///< submitted to the pool, not yet received
  std::unique_ptr<TaskPool> builds_;    ///< compiles ahead, a thread per core, when build_ahead > 0
  std::unique_ptr<TaskPool> requests_;  ///< the code synthesizer's requests, synthesis_parallel
  std::vector<std::string> skipped_agents_;
  // The code synthesizer's pseudo-template, the programs it wrote (by candidate), the reasons
  // of the last failures (for its next prompt) and what it spent.
  std::string code_template_;
  std::unique_ptr<ConstrainedSpace> code_space_;
  std::map<int64_t, Solution> programs_;
  std::deque<std::string> recent_failures_;
  SynthesisTotals synthesis_;
};

}  // namespace kernelarc
