// A process killed at any moment leaves a consistent workspace: the budget counts exactly the
// recorded evaluations, every row's object exists, and nothing committed is lost.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <random>
#include <string>
#include <thread>

#include "core/test_support.h"
#include "store/workspace.h"
#include "store_test_support.h"

namespace kernelarc {
namespace {

using testing::passed_evaluation;
using testing::sample_candidate;
using testing::sample_run;
using testing::TempDir;

// Evaluates a candidate the way the search will: the traces object first, then the row.
void evaluate(Workspace& workspace, int64_t candidate_id, int index) {
  const std::string traces_key =
      workspace.objects().put("{\"traces\": [" + std::to_string(index) + "]}");
  workspace.database().record_evaluation(candidate_id, passed_evaluation(traces_key, index));
}

// The child: resumes the run (re-queueing what was proposed but not evaluated), then proposes
// and evaluates candidates until killed, telling the parent after each committed evaluation.
[[noreturn]] void propose_and_evaluate_forever(const std::filesystem::path& root, int64_t run,
                                               int report_fd) {
  try {
    Workspace workspace(root);
    Database& db = workspace.database();
    int index = 0;
    for (const Candidate& pending : db.unevaluated_candidates(run)) {
      evaluate(workspace, pending.id, index++);
      if (::write(report_fd, "e", 1) != 1) ::_exit(3);
    }
    while (true) {
      const std::string solution_key =
          workspace.objects().put("{\"solution\": " + std::to_string(getpid() + index) + "}");
      const int64_t candidate = db.add_candidate(run, sample_candidate("explorer", solution_key));
      evaluate(workspace, candidate, index++);
      if (::write(report_fd, "e", 1) != 1) ::_exit(3);
    }
  } catch (...) {
    ::_exit(2);
  }
}

// Starts the child, waits for `evaluations` (>= 2) committed evaluations, then kills it with
// SIGKILL after a further `phase` (0..1) of one evaluation's duration, so that successive kills
// land at different points of the write sequence.
void run_child_and_kill(const std::filesystem::path& root, int64_t run, int evaluations,
                        double phase) {
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(pipe_fds[0]);
    propose_and_evaluate_forever(root, run, pipe_fds[1]);
  }
  ::close(pipe_fds[1]);
  int reported = 0;
  char byte;
  std::chrono::steady_clock::time_point first_report;
  while (reported < evaluations && ::read(pipe_fds[0], &byte, 1) == 1) {
    if (reported++ == 0) first_report = std::chrono::steady_clock::now();
  }
  if (reported == evaluations) {
    const auto one_evaluation =
        (std::chrono::steady_clock::now() - first_report) / (evaluations - 1);
    std::this_thread::sleep_for(
        std::chrono::duration_cast<std::chrono::microseconds>(one_evaluation * phase));
  }
  ::kill(child, SIGKILL);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ::close(pipe_fds[0]);
  ASSERT_EQ(reported, evaluations) << "the child stopped early, exit status " << status;
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;
}

TEST(StoreCrashSafety, KilledWriterLeavesBudgetAndObjectsConsistent) {
  TempDir dir;
  const std::filesystem::path root = dir / ".kernelarc";
  int64_t run = 0;
  {
    Workspace workspace(root);
    run = workspace.database().create_run(sample_run(1000));
  }
  int committed = 0;
  std::mt19937 random(7);
  std::uniform_real_distribution<double> phase(0.0, 1.0);
  for (int evaluations : {2, 3, 4, 2, 3, 4, 2, 3}) {
    run_child_and_kill(root, run, evaluations, phase(random));
    if (HasFatalFailure()) return;
    committed += evaluations;

    Workspace workspace(root);
    Database& db = workspace.database();
    int64_t evaluated = 0;
    for (const Candidate& candidate : db.candidates_of(run)) {
      EXPECT_NO_THROW(workspace.objects().get(candidate.solution_key));
      const std::optional<Evaluation> evaluation = db.evaluation_of(candidate.id);
      if (!evaluation) continue;
      ++evaluated;
      EXPECT_NO_THROW(workspace.objects().get(evaluation->traces_key));
    }
    EXPECT_EQ(db.budget_of(run).used, evaluated);
    EXPECT_GE(evaluated, committed) << "a committed evaluation was lost";
    EXPECT_LE(db.unevaluated_candidates(run).size(), 1u);
  }
}

}  // namespace
}  // namespace kernelarc
