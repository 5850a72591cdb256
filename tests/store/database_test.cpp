#include "store/database.h"

#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <fstream>
#include <string>

#include "core/error.h"
#include "core/test_support.h"
#include "store/schema.h"
#include "store_test_support.h"

namespace kernelarc {
namespace {

using testing::passed_evaluation;
using testing::sample_candidate;
using testing::sample_run;
using testing::TempDir;

// Runs one statement on the file behind the store's back, as another tool would.
void execute_raw(const std::filesystem::path& file, const char* sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(file.c_str(), &db), SQLITE_OK);
  EXPECT_EQ(sqlite3_exec(db, sql, nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  sqlite3_close(db);
}

TEST(Database, CreatesTheSchemaAndKeepsRunsAcrossReopen) {
  TempDir dir;
  const std::filesystem::path file = dir / "kernelarc.db";
  int64_t run_id = 0;
  {
    Database db(file);
    run_id = db.create_run(sample_run(7));
  }
  Database db(file);
  const std::optional<kernelarc::Run> run = db.find_run(run_id);
  ASSERT_TRUE(run);
  EXPECT_EQ(run->problem_name, "rmsnorm_h4096");
  EXPECT_EQ(run->problem_hash, "0123456789abcdef0123456789abcdef");
  EXPECT_EQ(run->device, "cpu");
  EXPECT_EQ(run->seed, 0xfedcba9876543210ull);
  EXPECT_EQ(run->config, sample_run().config);
  EXPECT_EQ(run->status, RunStatus::Running);
  EXPECT_FALSE(run->finished_at);
  EXPECT_FALSE(run->created_at.empty());
  EXPECT_EQ(db.budget_of(run_id).total, 7);
  EXPECT_EQ(db.budget_of(run_id).used, 0);
  EXPECT_FALSE(db.find_run(run_id + 1));

  db.finish_run(run_id, RunStatus::Finished);
  const int64_t second = db.create_run(sample_run());
  const std::vector<kernelarc::Run> runs = db.list_runs();
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].id, run_id);
  EXPECT_EQ(runs[0].status, RunStatus::Finished);
  EXPECT_TRUE(runs[0].finished_at);
  EXPECT_EQ(runs[1].id, second);
  EXPECT_EQ(runs[1].status, RunStatus::Running);
}

TEST(Database, ARunWhoseProcessIsGoneShowsAbandonedAndAStoppedOneIsClaimedOnResume) {
  TempDir dir;
  const std::filesystem::path file = dir / "kernelarc.db";
  int64_t run_id = 0;
  {
    Database db(file);
    run_id = db.create_run(sample_run());
    const auto run = db.find_run(run_id);
    ASSERT_TRUE(run->owner);
    EXPECT_EQ(*run->owner, this_process());
    EXPECT_EQ(shown_run_status(*run), "running");
  }
  // Its process killed at once: the row still says running.
  const pid_t child = fork();
  if (child == 0) _exit(0);
  waitpid(child, nullptr, 0);
  execute_raw(file, ("UPDATE runs SET owner_pid = " + std::to_string(child)).c_str());
  Database db(file);
  EXPECT_EQ(db.find_run(run_id)->status, RunStatus::Running);
  EXPECT_EQ(shown_run_status(*db.find_run(run_id)), "abandoned");

  db.finish_run(run_id, RunStatus::Stopped);
  EXPECT_EQ(shown_run_status(*db.find_run(run_id)), "stopped");
  EXPECT_TRUE(db.find_run(run_id)->finished_at);
  db.claim_run(run_id);
  const auto claimed = db.find_run(run_id);
  EXPECT_EQ(claimed->status, RunStatus::Running);
  EXPECT_FALSE(claimed->finished_at);
  EXPECT_EQ(*claimed->owner, this_process());
}

TEST(Database, UsesWalJournalMode) {
  TempDir dir;
  Database db(dir / "kernelarc.db");
  EXPECT_TRUE(std::filesystem::exists(dir / "kernelarc.db-wal"));
}

TEST(Database, RefusesASchemaFromANewerKernelarc) {
  TempDir dir;
  const std::filesystem::path file = dir / "kernelarc.db";
  { Database db(file); }
  execute_raw(file, "UPDATE schema_version SET version = 99");
  const std::string message = testing::input_error_of([&] { Database db(file); });
  EXPECT_NE(message.find(file.string()), std::string::npos) << message;
  EXPECT_NE(message.find("newer"), std::string::npos) << message;
}

TEST(Database, CorruptFileIsAnInputErrorNamingIt) {
  TempDir dir;
  const std::filesystem::path file = dir.write("kernelarc.db", std::string(8192, 'x'));
  const std::string message = testing::input_error_of([&] { Database db(file); });
  EXPECT_NE(message.find(file.string()), std::string::npos) << message;
}

TEST(Database, UnknownRunIsAnInputError) {
  TempDir dir;
  Database db(dir / "kernelarc.db");
  EXPECT_NE(testing::input_error_of([&] {
              db.add_candidate(42, sample_candidate("a", "k"));
            }).find("run 42"),
            std::string::npos);
  EXPECT_NE(testing::input_error_of([&] { db.budget_of(42); }).find("run 42"), std::string::npos);
}

TEST(Database, CandidatesGetConsecutiveSeqPerRun) {
  TempDir dir;
  Database db(dir / "kernelarc.db");
  const int64_t run_a = db.create_run(sample_run());
  const int64_t run_b = db.create_run(sample_run());
  const int64_t root = db.add_candidate(run_a, sample_candidate("explorer", "k0"));
  db.add_candidate(run_b, sample_candidate("explorer", "other run"));
  NewCandidate child = sample_candidate("refiner", "k1");
  child.parent_id = root;
  child.inspired_by = {root, 17};
  const int64_t child_id = db.add_candidate(run_a, child);
  db.add_candidate(run_a, sample_candidate("explorer", "k2"));

  const std::vector<Candidate> candidates = db.candidates_of(run_a);
  ASSERT_EQ(candidates.size(), 3u);
  for (int64_t seq = 0; seq < 3; ++seq) {
    EXPECT_EQ(candidates[seq].seq, seq);
    EXPECT_EQ(candidates[seq].solution_key, "k" + std::to_string(seq));
    EXPECT_EQ(candidates[seq].run_id, run_a);
  }
  EXPECT_EQ(candidates[1].id, child_id);
  EXPECT_EQ(candidates[1].agent, "refiner");
  EXPECT_EQ(candidates[1].parent_id, root);
  EXPECT_EQ(candidates[1].inspired_by, (std::vector<int64_t>{root, 17}));
  EXPECT_EQ(candidates[1].template_name, "rownorm");
  EXPECT_EQ(candidates[1].knob_point, child.knob_point);
  EXPECT_FALSE(candidates[0].parent_id);
  EXPECT_EQ(db.candidates_of(run_b).at(0).seq, 0);

  NewCandidate foreign_child = sample_candidate("refiner", "k9");
  foreign_child.parent_id = root;
  EXPECT_NE(testing::input_error_of([&] {
              db.add_candidate(run_b, foreign_child);
            }).find("parent candidate"),
            std::string::npos);
}

TEST(Database, UnevaluatedCandidatesAreThoseWithoutAnEvaluation) {
  TempDir dir;
  Database db(dir / "kernelarc.db");
  const int64_t run = db.create_run(sample_run());
  std::vector<int64_t> ids;
  for (int index = 0; index < 4; ++index) {
    ids.push_back(db.add_candidate(run, sample_candidate("a", "k" + std::to_string(index))));
  }
  db.record_evaluation(ids[0], passed_evaluation("t0", 1.0));
  db.record_evaluation(ids[2], passed_evaluation("t2", 2.0));
  const std::vector<Candidate> pending = db.unevaluated_candidates(run);
  ASSERT_EQ(pending.size(), 2u);
  EXPECT_EQ(pending[0].id, ids[1]);
  EXPECT_EQ(pending[1].id, ids[3]);
}

TEST(Database, RecordEvaluationCountsAgainstTheBudgetExactlyOnce) {
  TempDir dir;
  Database db(dir / "kernelarc.db");
  const int64_t run = db.create_run(sample_run(5));
  const int64_t candidate = db.add_candidate(run, sample_candidate("a", "k"));
  EXPECT_FALSE(db.evaluation_of(candidate));

  db.record_evaluation(candidate, passed_evaluation("traces-1", 3.0));
  EXPECT_EQ(db.budget_of(run).used, 1);
  EXPECT_EQ(db.budget_of(run).remaining(), 4);

  Evaluation again = passed_evaluation("traces-2", 9.0);
  again.status = "INCORRECT_NUMERICAL";
  EXPECT_THROW(db.record_evaluation(candidate, again), InternalError);
  EXPECT_EQ(db.budget_of(run).used, 1);
  const std::optional<Evaluation> stored = db.evaluation_of(candidate);
  ASSERT_TRUE(stored);
  EXPECT_EQ(stored->status, "PASSED");
  EXPECT_EQ(stored->traces_key, "traces-1");
  EXPECT_EQ(stored->median_ms, 3.0);
  EXPECT_DOUBLE_EQ(*stored->ci_low_ms, 2.7);
  EXPECT_DOUBLE_EQ(*stored->ci_high_ms, 3.3);
  EXPECT_EQ(stored->sol_score, 0.5);
  EXPECT_FALSE(stored->evaluated_at.empty());

  Evaluation failed;
  failed.status = "COMPILE_ERROR";
  failed.traces_key = "traces-3";
  const int64_t broken = db.add_candidate(run, sample_candidate("a", "k2"));
  db.record_evaluation(broken, failed);
  EXPECT_FALSE(db.evaluation_of(broken)->median_ms);
  EXPECT_FALSE(db.evaluation_of(broken)->sol_score);
  EXPECT_EQ(db.budget_of(run).used, 2);

  EXPECT_THROW(db.record_evaluation(broken + 100, failed), InputError);
  EXPECT_EQ(db.budget_of(run).used, 2);
}

TEST(Database, BoardIsAppendOnlyAndOrderedPerRun) {
  TempDir dir;
  Database db(dir / "kernelarc.db");
  const int64_t run = db.create_run(sample_run());
  const int64_t other = db.create_run(sample_run());
  const int64_t candidate = db.add_candidate(run, sample_candidate("a", "k"));
  db.append_board(run, BoardKind::Conclusion, "16-byte loads beat 4-byte loads", {candidate});
  db.append_board(other, BoardKind::Conclusion, "elsewhere", {});
  db.append_board(run, BoardKind::Redirect, "stop tuning block size; try fusion", {});
  db.append_board(run, BoardKind::Conclusion, "third", {candidate, candidate + 1});

  const std::vector<BoardEntry> board = db.board_of(run);
  ASSERT_EQ(board.size(), 3u);
  EXPECT_EQ(board[0].text, "16-byte loads beat 4-byte loads");
  EXPECT_EQ(board[0].kind, BoardKind::Conclusion);
  EXPECT_EQ(board[0].evidence, (std::vector<int64_t>{candidate}));
  EXPECT_EQ(board[1].kind, BoardKind::Redirect);
  EXPECT_TRUE(board[1].evidence.empty());
  EXPECT_EQ(board[2].text, "third");
  for (int64_t seq = 0; seq < 3; ++seq) EXPECT_EQ(board[seq].seq, seq);
  EXPECT_LT(board[0].id, board[2].id);
  EXPECT_EQ(db.board_of(other).size(), 1u);
}

TEST(Database, AgentStateIsReplacedOnSave) {
  TempDir dir;
  Database db(dir / "kernelarc.db");
  const int64_t run = db.create_run(sample_run());
  EXPECT_FALSE(db.load_agent_state(run, "explorer"));
  db.save_agent_state(run, "explorer", {{"island", 1}});
  db.save_agent_state(run, "refiner", {{"focus", "tiles"}});
  db.save_agent_state(run, "explorer", {{"island", 2}, {"temperature", 0.7}});
  EXPECT_EQ(*db.load_agent_state(run, "explorer"),
            nlohmann::json({{"island", 2}, {"temperature", 0.7}}));
  EXPECT_EQ(*db.load_agent_state(run, "refiner"), nlohmann::json({{"focus", "tiles"}}));
}

}  // namespace
}  // namespace kernelarc
