// The orchestrator end to end on a real problem and the real template library, with a
// deterministic stand-in for the guard (times are a fixed function of the knob point), so that
// determinism, resume, the board and the budget can be checked exactly and quickly.
#include <gtest/gtest.h>

#include <atomic>
#include <csignal>

#include <limits>
#include <map>
#include <set>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "core/error.h"
#include "core/test_support.h"
#include "optimize/search_setup.h"
#include "optimize/skill_hint.h"
#include "orchestrator_test_support.h"
#include "search/selection.h"

namespace kernelarc {
namespace {

using testing::kProblem;
using testing::LandscapeEvaluator;
using testing::Proposed;
using testing::sequence;
using testing::SilentProgress;
using testing::TempDir;

class OrchestratorTest : public ::testing::Test {
 protected:
  OrchestratorTest() : setup_(kProblem, SearchSetupOptions{}) {}

  OptimizeSummary optimize(Workspace& workspace, const OptimizeOptions& options,
                           LandscapeEvaluator& evaluator, std::optional<int64_t> resume = {},
                           std::vector<SkillHint> hints = {},
                           const std::atomic<int>* stop = nullptr) {
    OptimizeTarget target = setup_.target(setup_.problem().workloads);
    target.skill_hints = std::move(hints);
    Orchestrator orchestrator(target, evaluator, workspace, options, progress_);
    if (stop) orchestrator.stop_on(*stop);
    return resume ? orchestrator.resume(*resume) : orchestrator.run();
  }

  SearchSetup setup_;
  SilentProgress progress_;
};

TEST_F(OrchestratorTest, SameSeedSameCandidateSequenceAndADifferentSeedDiffers) {
  OptimizeOptions options;
  options.budget = 40;
  std::vector<std::vector<Proposed>> runs;
  for (uint64_t seed : {7, 7, 8}) {
    TempDir dir;
    Workspace workspace(dir.path());
    LandscapeEvaluator evaluator(setup_.problem());
    options.seed = seed;
    const auto summary = optimize(workspace, options, evaluator);
    runs.push_back(sequence(workspace.database(), summary.run_id));
  }
  ASSERT_EQ(runs[0].size(), 41u);  // the baseline and the budget
  EXPECT_EQ(runs[0].front().agent, "baseline");
  EXPECT_EQ(runs[0], runs[1]);
  EXPECT_NE(runs[0], runs[2]);
}

TEST_F(OrchestratorTest, EveryPolicySpendsTheBudgetAndBeatsTheBaseline) {
  for (const std::string& policy : policy_names()) {
    TempDir dir;
    Workspace workspace(dir.path());
    LandscapeEvaluator evaluator(setup_.problem());
    OptimizeOptions options;
    options.budget = 30;
    options.policy = policy;
    const auto summary = optimize(workspace, options, evaluator);
    EXPECT_EQ(summary.evaluated, 30) << policy;
    EXPECT_EQ(workspace.database().budget_of(summary.run_id).used, 31) << policy;
    // 1 baseline + 30 candidates + (3 finalists + baseline) x 3 rounds, those through the full
    // guard, whose last round is the winner's report.
    EXPECT_EQ(evaluator.calls_, 1 + 30 + 4 * 3) << policy;
    EXPECT_EQ(evaluator.final_calls_, 4 * 3) << policy;
    ASSERT_FALSE(summary.finalists.empty()) << policy;
    ASSERT_TRUE(summary.speedup) << policy;
    EXPECT_GT(summary.speedup->low, 3) << policy;  // landscape times are 1-3.5 ms, baseline 10
    EXPECT_EQ(workspace.database().find_run(summary.run_id)->status, RunStatus::Finished);
  }
}

TEST_F(OrchestratorTest, SkillHintsMakeTheHintedPointTheFirstCandidate) {
  // A cold run finds a best; a hint that changes the default point into it must make that point
  // the warm run's first candidate (and, measured first, the winner of a short run).
  OptimizeOptions options;
  options.budget = 40;
  KnobPoint best;
  std::string template_name;
  {
    TempDir dir;
    Workspace workspace(dir.path());
    LandscapeEvaluator evaluator(setup_.problem());
    const auto summary = optimize(workspace, options, evaluator);
    ASSERT_FALSE(summary.finalists.empty());
    const auto candidate = workspace.database().find_candidate(summary.finalists[0].candidate_id);
    best = knob_point_from_json(candidate->knob_point);
    template_name = candidate->template_name;
  }
  const BoundTemplate* bound = setup_.target(setup_.problem().workloads).templates.front();
  const KnobPoint start = bound->space().space().default_point();
  ASSERT_NE(start, best);
  SkillHint hint{7, template_name, {}, 0.5};
  for (const auto& [knob, value] : best)
    if (start.at(knob) != value) hint.changes.push_back({knob, start.at(knob), value});

  TempDir dir;
  Workspace workspace(dir.path());
  LandscapeEvaluator evaluator(setup_.problem());
  options.budget = 6;
  const auto summary = optimize(workspace, options, evaluator, {}, {hint});
  const auto proposed = sequence(workspace.database(), summary.run_id);
  ASSERT_GE(proposed.size(), 2u);
  EXPECT_EQ(proposed[1].point, knob_point_to_json(best).dump());
  EXPECT_EQ(summary.finalists.front().candidate_id,
            workspace.database().candidates_of(summary.run_id)[1].id);
  EXPECT_NE(std::find(progress_.messages.begin(), progress_.messages.end(),
                      "warm start: 1 skill(s) from earlier runs as first points and priors"),
            progress_.messages.end());
}

// An imported problem has no baseline solution: its fitness is relative to the first passing
// candidate, and the run says so before the first line reads like a speedup over PyTorch.
TEST_F(OrchestratorTest, WithoutABaselineTheRunSaysWhatItsSpeedupsAreRelativeTo) {
  const std::string note =
      "no baseline solution: the speedups below are relative to the first passing candidate, "
      "not to PyTorch";
  OptimizeOptions options;
  options.budget = 3;
  OptimizeTarget target = setup_.target(setup_.problem().workloads);
  ASSERT_TRUE(target.baseline.has_value());
  for (const bool with_baseline : {true, false}) {
    if (!with_baseline) target.baseline.reset();
    TempDir dir;
    Workspace workspace(dir.path());
    LandscapeEvaluator evaluator(setup_.problem());
    progress_.messages.clear();
    Orchestrator(target, evaluator, workspace, options, progress_).run();
    const bool said = std::find(progress_.messages.begin(), progress_.messages.end(), note) !=
                      progress_.messages.end();
    EXPECT_EQ(said, !with_baseline);
  }
}

TEST_F(OrchestratorTest, TheStrongestHintAloneComesBeforeAllHintsTogether) {
  // Two hints on different knobs, each to a value the space accepts with the other.
  const BoundTemplate* bound = setup_.target(setup_.problem().workloads).templates.front();
  const KnobPoint start = bound->space().space().default_point();
  std::vector<KnobChange> changes;
  KnobPoint both = start;
  for (const Knob& knob : bound->space().space().knobs()) {
    for (uint64_t index = 0; index < knob.size() && changes.size() < 2; ++index) {
      KnobPoint changed = both;
      changed[knob.name()] = knob.value_at(index);
      if (changed == both || !bound->space().is_valid(changed)) continue;
      changes.push_back({knob.name(), start.at(knob.name()), changed.at(knob.name())});
      both = std::move(changed);
      break;
    }
  }
  ASSERT_EQ(changes.size(), 2u);
  const std::string name = bound->kernel().name;
  const SkillHint strong{1, name, {changes[0]}, 0.9}, weak{2, name, {changes[1]}, 0.2};
  KnobPoint strong_alone = start;
  strong_alone[changes[0].knob] = changes[0].to;

  TempDir dir;
  Workspace workspace(dir.path());
  LandscapeEvaluator evaluator(setup_.problem());
  OptimizeOptions options;
  options.budget = 4;
  const auto summary = optimize(workspace, options, evaluator, {}, {weak, strong});
  const auto proposed = sequence(workspace.database(), summary.run_id);
  ASSERT_GE(proposed.size(), 3u);
  EXPECT_EQ(proposed[1].point, knob_point_to_json(strong_alone).dump());
  EXPECT_EQ(proposed[2].point, knob_point_to_json(both).dump());
}

TEST(SkillHints, ApplyStrongestLastAndScoreAgreement) {
  const SkillHint weak{1, "t", {{"A", int64_t{1}, int64_t{2}}, {"B", int64_t{1}, int64_t{3}}}, 0.2};
  const SkillHint strong{2, "t", {{"A", int64_t{1}, int64_t{4}}}, 0.6};
  const KnobPoint start{{"A", int64_t{1}}, {"B", int64_t{1}}, {"C", std::string("x")}};
  const KnobPoint applied = apply_hints(start, {&strong, &weak});
  EXPECT_EQ(applied, (KnobPoint{{"A", int64_t{4}}, {"B", int64_t{3}}, {"C", std::string("x")}}));
  EXPECT_DOUBLE_EQ(hint_prior(applied, {&weak, &strong}), 0.1 + 0.9 * 0.6 / 0.8);
  EXPECT_DOUBLE_EQ(hint_prior(start, {&weak, &strong}), 0.1);
  const auto round_trip = skill_hints_from_json(skill_hints_to_json({weak, strong}), "test");
  ASSERT_EQ(round_trip.size(), 2u);
  EXPECT_EQ(round_trip[0].changes[1].knob, "B");
  EXPECT_EQ(round_trip[0].changes[1].to, KnobValue(int64_t{3}));
  EXPECT_DOUBLE_EQ(round_trip[1].weight, 0.6);
  EXPECT_THROW(skill_hints_from_json(nlohmann::json::array({{{"skill", 1}}}), "run 3 config"),
               InputError);
}

TEST_F(OrchestratorTest, AgentsWithoutAKnobOfTheirRoleAreNotStartedAndTheOthersAllPropose) {
  TempDir dir;
  Workspace workspace(dir.path());
  LandscapeEvaluator evaluator(setup_.problem());
  OptimizeOptions options;
  options.budget = 30;
  const auto summary = optimize(workspace, options, evaluator);
  EXPECT_EQ(summary.skipped_agents, std::vector<std::string>{"library"});
  std::set<std::string> agents;
  for (const Proposed& proposed : sequence(workspace.database(), summary.run_id))
    agents.insert(proposed.agent);
  EXPECT_EQ(agents, (std::set<std::string>{"baseline", "explore", "memory", "parallelism",
                                           "compute", "fusion"}));
}

TEST_F(OrchestratorTest, BoardHoldsVerifiedConclusionsAndPlateauRedirects) {
  TempDir dir;
  Workspace workspace(dir.path());
  LandscapeEvaluator evaluator(setup_.problem());
  OptimizeOptions options;
  options.budget = 48;
  options.plateau = 2;
  const auto summary = optimize(workspace, options, evaluator);
  int conclusions = 0;
  int redirects = 0;
  int adoptions = 0;
  for (const BoardEntry& entry : workspace.database().board_of(summary.run_id)) {
    if (entry.kind == BoardKind::Conclusion) {
      ++conclusions;
      ASSERT_EQ(entry.evidence.size(), 2u) << entry.text;
      EXPECT_NE(entry.text.find("(rmsnorm_f32, all "), std::string::npos) << entry.text;
      EXPECT_NE(entry.text.find("made it faster by"), std::string::npos) << entry.text;
      // The evidence: a parent and its child, the child faster beyond both intervals.
      const auto parent = workspace.database().evaluation_of(entry.evidence[0]);
      const auto child = workspace.database().evaluation_of(entry.evidence[1]);
      ASSERT_TRUE(parent && child && parent->ci_low_ms && child->ci_high_ms);
      EXPECT_GT(*parent->ci_low_ms, *child->ci_high_ms) << entry.text;
      EXPECT_EQ(workspace.database().find_candidate(entry.evidence[1])->parent_id,
                entry.evidence[0]);
    } else if (entry.text.find(" plateaued; ") != std::string::npos) {
      ++redirects;
    } else {
      // A restricted agent taking another's better best names it as its evidence.
      ++adoptions;
      EXPECT_NE(entry.text.find(" was beaten beyond noise; took "), std::string::npos)
          << entry.text;
      ASSERT_EQ(entry.evidence.size(), 1u) << entry.text;
      EXPECT_NE(entry.text.find(fmt::format("(candidate {},", entry.evidence[0])),
                std::string::npos)
          << entry.text;
    }
  }
  EXPECT_GT(conclusions, 0);
  EXPECT_GT(redirects, 0);
  EXPECT_GT(adoptions, 0);
}

// Compiling ahead happens on other threads while the queue moves on: each must compile the
// very candidate that is measured next, not what is left of it after the queue took it over.
TEST_F(OrchestratorTest, CompilesAheadTheSameSolutionsItThenMeasures) {
  OptimizeOptions options;
  options.budget = 20;
  options.build_ahead = 2;
  TempDir dir;
  Workspace workspace(dir.path());
  LandscapeEvaluator evaluator(setup_.problem());
  ASSERT_EQ(optimize(workspace, options, evaluator).evaluated, 20);
  // Every candidate but the baseline was compiled ahead, as the solution then measured.
  const std::set<std::string> prebuilt(evaluator.prebuilt_.begin(), evaluator.prebuilt_.end());
  EXPECT_EQ(evaluator.prebuilt_.size(), 20u);
  EXPECT_EQ(prebuilt.size(), 20u);
  for (const std::string& solution : prebuilt)
    EXPECT_TRUE(evaluator.evaluated_.count(solution))
        << "compiled ahead, never measured: " << solution;
}

TEST_F(OrchestratorTest, ACrashedRunResumesToTheSameCandidatesWithoutMeasuringAnyTwice) {
  OptimizeOptions options;
  options.budget = 36;
  options.build_ahead = 1;
  TempDir straight_dir;
  Workspace straight(straight_dir.path());
  LandscapeEvaluator straight_evaluator(setup_.problem());
  const auto straight_summary = optimize(straight, options, straight_evaluator);

  TempDir dir;
  int64_t run_id = 0;
  {
    Workspace workspace(dir.path());
    LandscapeEvaluator crashing(setup_.problem());
    crashing.crash_after_ = 17;
    EXPECT_THROW(optimize(workspace, options, crashing), std::runtime_error);
    run_id = workspace.database().list_runs().back().id;
    EXPECT_EQ(workspace.database().budget_of(run_id).used, 17);
    EXPECT_EQ(workspace.database().find_run(run_id)->status, RunStatus::Running);
  }
  Workspace workspace(dir.path());
  LandscapeEvaluator resumed(setup_.problem());
  OptimizeOptions ignored;  // a resume takes the stored options
  ignored.budget = 5;
  const auto summary = optimize(workspace, ignored, resumed, run_id);
  EXPECT_EQ(summary.evaluated, 36);
  EXPECT_EQ(resumed.calls_, (37 - 17) + 4 * 3);
  EXPECT_EQ(sequence(workspace.database(), run_id),
            sequence(straight.database(), straight_summary.run_id));
  EXPECT_TRUE(workspace.database().unevaluated_candidates(run_id).empty());
  ASSERT_FALSE(summary.finalists.empty());
  EXPECT_EQ(summary.finalists.front().label, straight_summary.finalists.front().label);
}

TEST_F(OrchestratorTest, WhereEachShapeHasItsOwnBestPointTheWinnerDispatchesByShape) {
  OptimizeOptions options;
  options.budget = 40;
  std::vector<std::vector<Proposed>> sequences;
  for (int repeat = 0; repeat < 2; ++repeat) {
    TempDir dir;
    Workspace workspace(dir.path());
    LandscapeEvaluator evaluator(setup_.problem());
    evaluator.shape_dependent_ = true;
    const auto summary = optimize(workspace, options, evaluator);
    sequences.push_back(sequence(workspace.database(), summary.run_id));
    EXPECT_EQ(summary.evaluated, 40);
    EXPECT_EQ(workspace.database().budget_of(summary.run_id).used, 41);
    // The dispatch is the last candidate, a child of the top candidate, measured only in the
    // final rounds: 1 baseline + 40 + (baseline, 3 finalists, the dispatch) x 3.
    const auto candidates = workspace.database().candidates_of(summary.run_id);
    ASSERT_EQ(candidates.size(), 42u);
    const Candidate& dispatch = candidates.back();
    EXPECT_EQ(dispatch.agent, "dispatch");
    ASSERT_TRUE(dispatch.parent_id);
    EXPECT_FALSE(dispatch.inspired_by.empty());
    EXPECT_NE(dispatch.note.find("per-shape dispatch of #" + std::to_string(*dispatch.parent_id)),
              std::string::npos)
        << dispatch.note;
    EXPECT_EQ(evaluator.calls_, 1 + 40 + 5 * 3);
    // Each of its shapes runs the point measured fastest there, so it wins the final rounds.
    ASSERT_FALSE(summary.finalists.empty());
    const Finalist& winner = summary.finalists.front();
    EXPECT_EQ(winner.candidate_id, dispatch.id);
    EXPECT_EQ(winner.agent, "dispatch");
    ASSERT_TRUE(winner.solution.ext.contains("variants"));
    EXPECT_EQ(winner.solution.ext["variants"].size(), dispatch.inspired_by.size());
    for (const Finalist& other : summary.finalists) EXPECT_GE(winner.fitness, other.fitness);
    // A variant's shape runs exactly the time of the candidate it came from.
    for (const auto& [uuid, time] : winner.measurement.times) {
      double fastest = std::numeric_limits<double>::infinity();
      for (const Candidate& candidate : candidates) {
        const auto evaluation = workspace.database().evaluation_of(candidate.id);
        if (candidate.agent == "baseline" || !evaluation || evaluation->status != "PASSED")
          continue;
        const auto blob = nlohmann::json::parse(workspace.objects().get(evaluation->traces_key));
        const auto measured = measurement_from_json(blob.at("measurement"), "test");
        fastest = std::min(fastest, measured.times.at(uuid).median_ms);
      }
      // (or the top candidate, when the fastest was within the 0.1% noise of the landscape)
      EXPECT_LE(time.median_ms, fastest * 1.0025) << uuid;
    }
    ASSERT_FALSE(summary.lineage.empty());
    EXPECT_EQ(summary.lineage.back().operation, "dispatch");
    EXPECT_EQ(summary.lineage.back().candidate_id, dispatch.id);
    EXPECT_EQ(summary.lineage[summary.lineage.size() - 2].candidate_id, *dispatch.parent_id);
  }
  EXPECT_EQ(sequences[0], sequences[1]);
}

TEST_F(OrchestratorTest, ABaselineNoCandidateBeatsStaysTheBestSolution) {
  for (const double baseline_ms : {0.5, 10.0}) {
    TempDir dir;
    Workspace workspace(dir.path());
    LandscapeEvaluator evaluator(setup_.problem());
    evaluator.baseline_ms_ = baseline_ms;  // the template points take 1 to 3.5 ms
    OptimizeOptions options;
    options.budget = 10;
    const auto summary = optimize(workspace, options, evaluator);
    ASSERT_TRUE(summary.speedup);
    EXPECT_EQ(summary.kept_baseline, baseline_ms < 1) << summary.speedup->value;
    EXPECT_EQ(summary.best().agent, baseline_ms < 1 ? "baseline" : summary.finalists[0].agent);
  }
}

TEST_F(OrchestratorTest, TheBestCandidatesBottleneckGivesItsAgentsMoreTurns) {
  std::map<std::string, int> memory_candidates;
  for (const std::string bottleneck : {"", "memory"}) {
    TempDir dir;
    Workspace workspace(dir.path());
    LandscapeEvaluator evaluator(setup_.problem());
    evaluator.bottleneck_ = bottleneck;
    OptimizeOptions options;
    options.budget = 40;
    options.agents = {"memory", "parallelism", "fusion"};
    const auto summary = optimize(workspace, options, evaluator);
    for (const Candidate& candidate : workspace.database().candidates_of(summary.run_id))
      memory_candidates[bottleneck] += candidate.agent == "memory";
  }
  EXPECT_GT(memory_candidates["memory"], memory_candidates[""] + 5)
      << "without a diagnosis " << memory_candidates[""] << ", memory-bound "
      << memory_candidates["memory"];
}

// How many candidates are their parent with ROWS_PER_TASK one power of two higher.
int rows_per_task_raises(Database& db, int64_t run_id) {
  std::map<int64_t, KnobPoint> points;
  int raises = 0;
  for (const Candidate& candidate : db.candidates_of(run_id)) {
    const KnobPoint point = knob_point_from_json(candidate.knob_point);
    points[candidate.id] = point;
    if (!candidate.parent_id || !point.contains("ROWS_PER_TASK")) continue;
    KnobPoint raised = points.at(*candidate.parent_id);
    if (!raised.contains("ROWS_PER_TASK")) continue;
    raised["ROWS_PER_TASK"] = 2 * std::get<int64_t>(raised["ROWS_PER_TASK"]);
    raises += raised == point;
  }
  return raises;
}

TEST_F(OrchestratorTest, AgentsFollowTheDiagnosisSuggestionsDeterministically) {
  std::map<std::string, std::vector<int>> raises;
  std::map<std::string, std::vector<std::vector<Proposed>>> runs;
  for (const std::string suggested : {"", "", "raise", "raise"}) {
    TempDir dir;
    Workspace workspace(dir.path());
    LandscapeEvaluator evaluator(setup_.problem());
    evaluator.bottleneck_ = "latency";
    if (!suggested.empty())
      evaluator.suggestions_ = OrderedJson::array({{{"knob", "ROWS_PER_TASK"},
                                                    {"direction", "raise"},
                                                    {"value", nullptr},
                                                    {"reason", "few rows per task"}}});
    OptimizeOptions options;
    options.budget = 30;
    options.agents = {"parallelism"};
    const auto summary = optimize(workspace, options, evaluator);
    raises[suggested].push_back(rows_per_task_raises(workspace.database(), summary.run_id));
    runs[suggested].push_back(sequence(workspace.database(), summary.run_id));
    // A step that followed a suggestion is stored with it; no other step has a note.
    int noted = 0;
    for (const Candidate& candidate : workspace.database().candidates_of(summary.run_id)) {
      if (candidate.note.empty()) continue;
      EXPECT_EQ(candidate.note, "diagnosis: raise ROWS_PER_TASK (few rows per task)");
      ++noted;
    }
    EXPECT_EQ(noted > 0, !suggested.empty()) << noted << " notes";
    // The winner's lineage carries each step's stored note, and prints it without repeating
    // the operation's name.
    for (const LineageStep& step : summary.lineage) {
      EXPECT_EQ(step.note, workspace.database().find_candidate(step.candidate_id)->note);
      if (step.operation == "diagnosis")
        EXPECT_NE(lineage_step_text(step).find("): raise ROWS_PER_TASK (few rows per task)"),
                  std::string::npos)
            << lineage_step_text(step);
    }
  }
  EXPECT_EQ(runs[""][0], runs[""][1]);
  EXPECT_EQ(runs["raise"][0], runs["raise"][1]);
  EXPECT_EQ(raises["raise"][0], raises["raise"][1]);
  EXPECT_GT(raises["raise"][0], raises[""][0] + 3)
      << "without suggestions " << raises[""][0] << ", with " << raises["raise"][0];
}

// A resumed run replays its first candidates from the stored measurements, so it can propose
// the same only if those kept the suggestions.
TEST_F(OrchestratorTest, AResumedRunFollowsTheStoredSuggestions) {
  const auto suggesting = [&](LandscapeEvaluator& evaluator) {
    evaluator.bottleneck_ = "latency";
    evaluator.suggestions_ = OrderedJson::array({{{"knob", "ROWS_PER_TASK"},
                                                  {"direction", "raise"},
                                                  {"value", nullptr},
                                                  {"reason", "few rows per task"}}});
  };
  OptimizeOptions options;
  options.budget = 24;
  options.agents = {"parallelism"};
  TempDir straight_dir;
  Workspace straight(straight_dir.path());
  LandscapeEvaluator straight_evaluator(setup_.problem());
  suggesting(straight_evaluator);
  const auto straight_summary = optimize(straight, options, straight_evaluator);

  TempDir dir;
  int64_t run_id = 0;
  {
    Workspace workspace(dir.path());
    LandscapeEvaluator crashing(setup_.problem());
    suggesting(crashing);
    crashing.crash_after_ = 12;
    EXPECT_THROW(optimize(workspace, options, crashing), std::runtime_error);
    run_id = workspace.database().list_runs().back().id;
  }
  Workspace workspace(dir.path());
  LandscapeEvaluator resumed(setup_.problem());
  suggesting(resumed);
  optimize(workspace, options, resumed, run_id);
  EXPECT_EQ(sequence(workspace.database(), run_id),
            sequence(straight.database(), straight_summary.run_id));
}

// bench --resume and optimize --resume find runs by this hash: a run made for another lowering
// of the same definition is another problem.
TEST(ProblemHash, CoversTheFamilyAndParametersTheProblemIsServedAs) {
  Problem problem;
  problem.definition.raw = {{"name", "p"}, {"reference", "def run(x): return x"}};
  problem.definition.ext.op_family = "fused";
  problem.definition.ext.op_params = {{"version", 1}, {"kernels", {1}}};
  const std::string hash = problem_hash(problem);
  EXPECT_EQ(problem_hash(problem), hash);
  Problem relowered = problem;
  relowered.definition.ext.op_params["kernels"] = {1, 2};
  EXPECT_NE(problem_hash(relowered), hash);
  Problem matched = problem;
  matched.definition.ext.op_family = "softmax";
  EXPECT_NE(problem_hash(matched), hash);
  Problem edited = problem;
  edited.definition.raw["reference"] = "def run(x): return x + 1";
  EXPECT_NE(problem_hash(edited), hash);
}

/// A LandscapeEvaluator that raises `stop` (as a SIGINT handler would) after `after` calls.
class InterruptingEvaluator : public LandscapeEvaluator {
 public:
  InterruptingEvaluator(const Problem& problem, std::atomic<int>& stop, int after)
      : LandscapeEvaluator(problem), stop_(stop), after_(after) {}
  std::vector<Trace> evaluate(const Solution& solution) override {
    auto traces = LandscapeEvaluator::evaluate(solution);
    if (calls_ == after_) stop_.store(SIGINT);
    return traces;
  }

 private:
  std::atomic<int>& stop_;
  int after_;
};

TEST_F(OrchestratorTest, AnInterruptedRunIsStoppedWithWhatItMeasuredAndResumesToTheSameRun) {
  OptimizeOptions options;
  options.budget = 20;
  TempDir straight_dir;
  Workspace straight(straight_dir.path());
  LandscapeEvaluator straight_evaluator(setup_.problem());
  const auto straight_summary = optimize(straight, options, straight_evaluator);

  TempDir dir;
  Workspace workspace(dir.path());
  std::atomic<int> stop{0};
  InterruptingEvaluator interrupted(setup_.problem(), stop, 8);  // the baseline and 7 more
  const auto stopped = optimize(workspace, options, interrupted, {}, {}, &stop);
  EXPECT_EQ(stopped.interrupted_by, SIGINT);
  EXPECT_EQ(stopped.stop_reason, "interrupted by SIGINT");
  EXPECT_TRUE(stopped.finalists.empty());
  EXPECT_EQ(interrupted.final_calls_, 0) << "no final re-measurement";
  EXPECT_EQ(interrupted.calls_, 8) << "nothing measured after the signal";
  EXPECT_EQ(workspace.database().find_run(stopped.run_id)->status, RunStatus::Stopped);
  EXPECT_EQ(workspace.database().budget_of(stopped.run_id).used, 8);

  // Resumed, it measures only what it had not and ends as the uninterrupted run did.
  LandscapeEvaluator resumed(setup_.problem());
  const auto summary = optimize(workspace, options, resumed, stopped.run_id);
  EXPECT_EQ(summary.interrupted_by, 0);
  EXPECT_EQ(workspace.database().find_run(stopped.run_id)->status, RunStatus::Finished);
  EXPECT_EQ(sequence(workspace.database(), stopped.run_id),
            sequence(straight.database(), straight_summary.run_id));
  EXPECT_EQ(resumed.calls_ - resumed.final_calls_, 21 - 8);
  ASSERT_FALSE(summary.finalists.empty());
  EXPECT_EQ(summary.finalists.front().label, straight_summary.finalists.front().label);
}

TEST_F(OrchestratorTest, ResumeRefusesAFinishedRunAndAnUnknownOne) {
  TempDir dir;
  Workspace workspace(dir.path());
  LandscapeEvaluator evaluator(setup_.problem());
  OptimizeOptions options;
  options.budget = 4;
  const auto summary = optimize(workspace, options, evaluator);
  EXPECT_THROW(optimize(workspace, options, evaluator, summary.run_id), InputError);
  EXPECT_THROW(optimize(workspace, options, evaluator, summary.run_id + 100), InputError);
}

}  // namespace
}  // namespace kernelarc
