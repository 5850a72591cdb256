// Code synthesizers in the search: their programs are candidates like any other (agents choose
// their parents, the guard measures them, the store keeps them and what the synthesizer was
// asked), failures are recorded with their reasons without stopping the run, a failed program
// goes back once with its error, and a resumed run asks for nothing it already has.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "codesynth/llm_synthesizer.h"
#include "codesynth/prompt_builder.h"
#include "codesynth/synthesized_solution.h"
#include "core/test_support.h"
#include "llm/response_cache.h"
#include "optimize/code_moves.h"
#include "optimize/search_setup.h"
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

/// Writes a program whose text follows from the request (so a run is reproducible); every
/// fifth answer holds no program and every seventh computes a wrong answer. The search asks it
/// from several threads at once; `answer_after` may hold an answer back, as a model does.
class ScriptedSynthesizer : public CodeSynthesizer {
 public:
  std::string name() const override { return "scripted"; }

  SynthesisOutcome synthesize(const SynthesisRequest& request) override {
    {
      const std::lock_guard lock(mutex);
      requests.push_back(request);
      max_at_once = std::max(max_at_once, ++at_once);
    }
    arrived.notify_all();
    if (answer_after) answer_after(request);
    {
      const std::lock_guard lock(mutex);
      --at_once;
    }
    SynthesisOutcome outcome;
    const uint64_t draw = std::stoull(
        content_hash(fmt::format("{}:{}", request.seed, synthesis_move_name(request.move)))
            .substr(0, 8),
        nullptr, 16);
    outcome.exchanges.push_back(
        {fmt::format("prompt for a {} move", synthesis_move_name(request.move)), "answer",
         "scripted-model"});
    outcome.usage = {1000, 200, 0.01, false};
    if (draw % 5 == 0) {
      outcome.failure = "the answer held no code block";
      return outcome;
    }
    const std::string code =
        fmt::format("// program {}{}\n", draw,
                    draw % 7 == 0 && request.move != SynthesisMove::Repair ? " WRONG" : "");
    outcome.solution = make_synthesized_solution(request, name(), {{"main.cpp", code}});
    return outcome;
  }

  /// Waits until `count` requests have arrived, or `limit`; whether they did.
  bool wait_for_requests(std::size_t count, std::chrono::milliseconds limit) {
    std::unique_lock lock(mutex);
    return arrived.wait_for(lock, limit, [&] { return requests.size() >= count; });
  }

  std::function<void(const SynthesisRequest&)> answer_after;
  std::mutex mutex;
  std::condition_variable arrived;
  std::vector<SynthesisRequest> requests;
  int at_once = 0;
  int max_at_once = 0;  ///< the most requests being answered at one time
};

class CodeSynthesisTest : public ::testing::Test {
 protected:
  CodeSynthesisTest() : setup_(kProblem, SearchSetupOptions{}) {}

  OptimizeSummary optimize(Workspace& workspace, const OptimizeOptions& options,
                           LandscapeEvaluator& evaluator, bool templates = true,
                           std::optional<int64_t> resume = {}) {
    OptimizeTarget target = setup_.target(setup_.problem().workloads);
    if (!templates) target.templates.clear();
    target.code_synthesizer = &synthesizer_;
    target.hardware = "a test machine";
    target.knowledge = {"note: vectorize the row"};
    Orchestrator orchestrator(target, evaluator, workspace, options, progress_);
    return resume ? orchestrator.resume(*resume) : orchestrator.run();
  }

  void check_programs_and_failures(int parallel);

  SearchSetup setup_;
  ScriptedSynthesizer synthesizer_;
  SilentProgress progress_;
};

// With one request at a time and with several out at once (parallel 2 once drew a program's
// revision number from a board conclusion and proposed a revision it already had).
TEST_F(CodeSynthesisTest, ProgramsAreCandidatesAndFailuresAreRecordedWithTheirReasons) {
  for (const int parallel : {1, 2, 4}) {
    SCOPED_TRACE(fmt::format("synthesis_parallel {}", parallel));
    synthesizer_.requests.clear();
    check_programs_and_failures(parallel);
  }
}

void CodeSynthesisTest::check_programs_and_failures(int parallel) {
  TempDir dir;
  Workspace workspace(dir.path());
  LandscapeEvaluator evaluator(setup_.problem());
  OptimizeOptions options;
  options.budget = 40;
  options.agents = {"explore", "memory"};
  options.synthesis_parallel = parallel;
  const OptimizeSummary summary = optimize(workspace, options, evaluator);
  EXPECT_EQ(summary.evaluated, 40);

  Database& db = workspace.database();
  int programs = 0, no_program = 0, templates = 0;
  int64_t first_program = -1, last_template = -1;
  for (const Candidate& candidate : db.candidates_of(summary.run_id)) {
    if (candidate.template_name != "scripted") {
      if (candidate.agent != "baseline") {
        ++templates;
        last_template = candidate.seq;
      }
      EXPECT_FALSE(db.synthesis_of(candidate.id));
      continue;
    }
    if (first_program < 0) first_program = candidate.seq;
    const auto synthesis = db.synthesis_of(candidate.id);
    ASSERT_TRUE(synthesis) << "candidate " << candidate.id << " has no synthesis record";
    EXPECT_EQ(synthesis->model, "scripted-model");
    const auto record = nlohmann::json::parse(workspace.objects().get(synthesis->record_key));
    EXPECT_EQ(record.at("exchanges").size(), 1u);
    const auto evaluation = db.evaluation_of(candidate.id);
    ASSERT_TRUE(evaluation);
    if (synthesis->failure.empty()) {
      ++programs;
    } else {
      ++no_program;
      EXPECT_EQ(synthesis->failure, "the answer held no code block");
      EXPECT_EQ(evaluation->status, status_name(EvalStatus::SynthesisFailed));
    }
  }
  EXPECT_GT(programs, 3);
  EXPECT_GT(no_program, 0);
  EXPECT_GT(templates, 1);
  EXPECT_GT(last_template, first_program) << "the agents keep searching templates beside programs";
  EXPECT_EQ(summary.synthesis.calls, programs + no_program);
  EXPECT_EQ(summary.synthesis.input_tokens, 1000 * summary.synthesis.calls);
  EXPECT_DOUBLE_EQ(summary.synthesis.cost_usd, 0.01 * summary.synthesis.calls);

  // Each agent drafts once from the problem (with the baseline to beat), then builds on
  // candidates its policy picks; a wrong program goes back once with its error.
  int drafts = 0, repairs = 0, improvements = 0;
  for (const SynthesisRequest& request : synthesizer_.requests) {
    EXPECT_EQ(request.hardware, "a test machine");
    EXPECT_EQ(request.knowledge, std::vector<std::string>{"note: vectorize the row"});
    switch (request.move) {
      case SynthesisMove::Draft:
        ++drafts;
        EXPECT_FALSE(request.parent);
        ASSERT_FALSE(request.inspirations.empty());
        EXPECT_EQ(request.inspirations.back().solution.name, "rmsnorm_f32_naive");
        break;
      case SynthesisMove::Repair:
        ++repairs;
        ASSERT_TRUE(request.parent);
        EXPECT_EQ(request.parent->status, EvalStatus::IncorrectNumerical);
        EXPECT_NE(request.parent->log.find("wrong"), std::string::npos) << request.parent->log;
        EXPECT_FALSE(request.recent_failures.empty());
        break;
      default:
        ++improvements;
        ASSERT_TRUE(request.parent);
        EXPECT_FALSE(request.parent->solution.sources.empty());
        EXPECT_FALSE(request.parent->results.empty());
        break;
    }
  }
  EXPECT_GE(drafts, 2);
  EXPECT_GT(improvements, 0);
  EXPECT_GT(repairs, 0);
}

TEST_F(CodeSynthesisTest, WithoutTemplatesOnlyProgramsAreSearchedAndOneCanWin) {
  TempDir dir;
  Workspace workspace(dir.path());
  LandscapeEvaluator evaluator(setup_.problem());
  OptimizeOptions options;
  options.budget = 12;
  options.agents = {"explore"};
  const OptimizeSummary summary = optimize(workspace, options, evaluator, false);
  ASSERT_FALSE(summary.finalists.empty());
  EXPECT_NE(summary.finalists.front().label.find("scripted program"), std::string::npos);
  EXPECT_TRUE(summary.finalists.front().solution.ext.contains("synthesized"));
  ASSERT_TRUE(summary.speedup);
  EXPECT_GT(summary.speedup->value, 5);  // programs take 1-2 ms, the baseline 10
  for (const Candidate& candidate : workspace.database().candidates_of(summary.run_id))
    EXPECT_TRUE(candidate.agent == "baseline" || candidate.template_name == "scripted");
}

TEST_F(CodeSynthesisTest, EveryPolicyBuildsOnPrograms) {
  for (const std::string& policy : policy_names()) {
    TempDir dir;
    Workspace workspace(dir.path());
    LandscapeEvaluator evaluator(setup_.problem());
    OptimizeOptions options;
    options.budget = 12;
    options.policy = policy;
    options.agents = {"explore"};
    synthesizer_.requests.clear();
    const OptimizeSummary summary = optimize(workspace, options, evaluator, false);
    EXPECT_EQ(summary.evaluated, 12) << policy;
    const bool improved = std::any_of(
        synthesizer_.requests.begin(), synthesizer_.requests.end(),
        [](const SynthesisRequest& request) { return request.move == SynthesisMove::Improve; });
    EXPECT_TRUE(improved) << policy << " never built on a program";
  }
}

TEST_F(CodeSynthesisTest, TheTokenBudgetStopsTheRun) {
  TempDir dir;
  Workspace workspace(dir.path());
  LandscapeEvaluator evaluator(setup_.problem());
  OptimizeOptions options;
  options.budget = 40;
  options.agents = {"explore"};
  options.max_synthesis_tokens = 3000;  // 1200 a call: the third call reaches it
  options.synthesis_parallel = 1;
  const OptimizeSummary summary = optimize(workspace, options, evaluator, false);
  EXPECT_EQ(summary.synthesis.calls, 3);
  EXPECT_NE(summary.stop_reason.find("synthesis budget"), std::string::npos) << summary.stop_reason;

  // With four requests out at once, the three already asked when the third answer is applied
  // are answered and counted too, and nothing more is asked.
  TempDir parallel_dir;
  Workspace parallel_workspace(parallel_dir.path());
  LandscapeEvaluator parallel_evaluator(setup_.problem());
  options.synthesis_parallel = 4;
  const OptimizeSummary parallel = optimize(parallel_workspace, options, parallel_evaluator, false);
  EXPECT_EQ(parallel.synthesis.calls, 6);
  EXPECT_EQ(parallel.evaluated, 6);
  EXPECT_NE(parallel.stop_reason.find("synthesis budget"), std::string::npos)
      << parallel.stop_reason;
}

// Agents' requests are out together: the first is held until a second arrives, which a search
// asking one at a time would never send. Which answer comes first changes nothing stored.
TEST_F(CodeSynthesisTest, RequestsRunTogetherAndTheOrderOfAnswersChangesNothing) {
  OptimizeOptions options;
  options.budget = 16;
  options.agents = {"explore", "memory"};
  options.synthesis_parallel = 4;
  std::vector<std::vector<Proposed>> runs;
  std::vector<std::vector<std::string>> programs;
  for (const bool early_first : {true, false}) {
    synthesizer_.requests.clear();
    synthesizer_.max_at_once = 0;
    bool first = true;
    synthesizer_.answer_after = [&](const SynthesisRequest& request) {
      bool hold = false;
      {
        const std::lock_guard lock(synthesizer_.mutex);
        hold = std::exchange(first, false);
      }
      if (hold)
        EXPECT_TRUE(synthesizer_.wait_for_requests(2, std::chrono::seconds(20)))
            << "the second request never came while the first was out";
      // Answers come back in another order in each run: by seed, one way then the other.
      const auto slot = static_cast<int>(request.seed % 4);
      std::this_thread::sleep_for(std::chrono::milliseconds(5 * (early_first ? slot : 3 - slot)));
    };
    TempDir dir;
    Workspace workspace(dir.path());
    LandscapeEvaluator evaluator(setup_.problem());
    const OptimizeSummary summary = optimize(workspace, options, evaluator, false);
    EXPECT_EQ(summary.evaluated, 16);
    EXPECT_GE(synthesizer_.max_at_once, 2);
    runs.push_back(sequence(workspace.database(), summary.run_id));
    std::vector<std::string> keys;
    for (const Candidate& candidate : workspace.database().candidates_of(summary.run_id))
      keys.push_back(candidate.solution_key);
    programs.push_back(std::move(keys));
  }
  synthesizer_.answer_after = nullptr;
  EXPECT_EQ(runs[0], runs[1]);
  EXPECT_EQ(programs[0], programs[1]);

  options.synthesis_parallel = 1;
  synthesizer_.max_at_once = 0;
  TempDir dir;
  Workspace workspace(dir.path());
  LandscapeEvaluator evaluator(setup_.problem());
  optimize(workspace, options, evaluator, false);
  EXPECT_EQ(synthesizer_.max_at_once, 1);
}

TEST_F(CodeSynthesisTest, AResumedRunAsksForNothingItHasAndEndsTheSame) {
  OptimizeOptions options;
  options.budget = 24;
  options.agents = {"explore", "memory"};
  TempDir whole_dir;
  Workspace whole(whole_dir.path());
  LandscapeEvaluator uninterrupted(setup_.problem());
  const auto reference = optimize(whole, options, uninterrupted);
  const std::size_t asked = synthesizer_.requests.size();

  TempDir dir;
  Workspace workspace(dir.path());
  LandscapeEvaluator crashing(setup_.problem());
  crashing.crash_after_ = 13;
  synthesizer_.requests.clear();
  EXPECT_THROW(optimize(workspace, options, crashing), std::runtime_error);
  const int64_t run_id = workspace.database().list_runs().back().id;
  const std::size_t before_crash = synthesizer_.requests.size();

  // Requests still out when the run stopped left no record: those are asked again.
  std::size_t answered_before_crash = 0;
  for (const Candidate& candidate : workspace.database().candidates_of(run_id))
    answered_before_crash += workspace.database().synthesis_of(candidate.id).has_value();
  EXPECT_LE(answered_before_crash, before_crash);

  synthesizer_.requests.clear();
  LandscapeEvaluator resumed(setup_.problem());
  const auto summary = optimize(workspace, OptimizeOptions{}, resumed, true, run_id);
  EXPECT_EQ(summary.evaluated, reference.evaluated);
  EXPECT_EQ(summary.synthesis.calls, reference.synthesis.calls);
  EXPECT_EQ(sequence(workspace.database(), run_id), sequence(whole.database(), reference.run_id));
  EXPECT_EQ(answered_before_crash + synthesizer_.requests.size(), asked)
      << "asked " << before_crash << " before the crash, " << answered_before_crash
      << " of them answered";
}

/// A model that answers every prompt with a program that follows from the prompt's text.
class EchoModel : public ChatClient {
 public:
  ChatResult complete(const ModelConfig&, const ChatRequest& request) override {
    calls.fetch_add(1);
    const std::string digest = content_hash(request.messages.back().content).substr(0, 12);
    ChatResult result;
    result.attempts = 1;
    result.response =
        ChatResponse{"```cpp main.cpp\nint program_" + digest + "() { return 0; }\n```\n",
                     "stop",
                     false,
                     500,
                     100,
                     "echo"};
    return result;
  }
  std::atomic<int> calls{0};
};

TEST_F(CodeSynthesisTest, AReplayFromTheResponseCacheGivesTheSameCandidates) {
  TempDir cache;
  const ModelConfig model{.name = "echo@openai",
                          .provider = "openai",
                          .endpoint = "http://127.0.0.1:9/v1",
                          .model = "echo"};
  OptimizeOptions options;
  options.budget = 16;
  options.agents = {"explore", "memory"};
  std::vector<std::vector<std::string>> programs;
  for (const CacheMode mode : {CacheMode::Record, CacheMode::Replay}) {
    auto echo = std::make_unique<EchoModel>();
    EchoModel* model_calls = echo.get();
    CachingChatClient client(mode == CacheMode::Record ? std::move(echo) : nullptr, cache.path(),
                             mode);
    LlmSynthesizer llm(
        client, [&](uint64_t) -> const ModelConfig& { return model; }, load_prompt_templates({}));
    TempDir dir;
    Workspace workspace(dir.path());
    LandscapeEvaluator evaluator(setup_.problem());
    OptimizeTarget target = setup_.target(setup_.problem().workloads);
    target.code_synthesizer = &llm;
    Orchestrator orchestrator(target, evaluator, workspace, options, progress_);
    const OptimizeSummary summary = orchestrator.run();
    std::vector<std::string> run;
    for (const Candidate& candidate : workspace.database().candidates_of(summary.run_id)) {
      const auto synthesis = workspace.database().synthesis_of(candidate.id);
      if (!synthesis) continue;
      EXPECT_EQ(synthesis->failure, "");
      EXPECT_EQ(synthesis->from_cache, mode == CacheMode::Replay);
      run.push_back(candidate.agent + " " + candidate.solution_key);
    }
    if (mode == CacheMode::Record) EXPECT_EQ(model_calls->calls, static_cast<int>(run.size()));
    programs.push_back(std::move(run));
  }
  EXPECT_GT(programs[0].size(), 2u);
  EXPECT_EQ(programs[0], programs[1]);
}

}  // namespace
}  // namespace kernelarc
