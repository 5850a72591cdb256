// Workspaces written by earlier kernelarc versions gain the newer tables and columns on open and
// keep what they held.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include "core/test_support.h"
#include "store/database.h"
#include "store/schema.h"
#include "store_test_support.h"

namespace kernelarc {
namespace {

using testing::sample_candidate;
using testing::sample_run;
using testing::TempDir;

// What each version added, undone newest first: a fresh database turned into one that version
// wrote.
const char* const kUndoVersion[] = {
    "",
    "DROP TABLE syntheses",
    "DROP TABLE profiles; ALTER TABLE candidates DROP COLUMN note",
    R"sql(CREATE TABLE runs_v3 (
      id INTEGER PRIMARY KEY,
      created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
      problem_name TEXT NOT NULL,
      problem_hash TEXT NOT NULL,
      device TEXT NOT NULL,
      seed INTEGER NOT NULL,
      config TEXT NOT NULL,
      status TEXT NOT NULL DEFAULT 'running' CHECK (status IN ('running', 'finished', 'failed')),
      finished_at TEXT);
    INSERT INTO runs_v3 SELECT id, created_at, problem_name, problem_hash, device, seed, config,
      status, finished_at FROM runs;
    DROP TABLE runs;
    ALTER TABLE runs_v3 RENAME TO runs)sql",
};

void downgrade(const std::filesystem::path& file, int64_t version) {
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(file.c_str(), &raw), SQLITE_OK);
  for (int64_t undone = kStoreSchemaVersion; undone > version; --undone)
    ASSERT_EQ(sqlite3_exec(raw, kUndoVersion[undone - 1], nullptr, nullptr, nullptr), SQLITE_OK)
        << sqlite3_errmsg(raw);
  const std::string set_version = "UPDATE schema_version SET version = " + std::to_string(version);
  ASSERT_EQ(sqlite3_exec(raw, set_version.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(raw);
}

int64_t raw_version(const std::filesystem::path& file) {
  sqlite3* raw = nullptr;
  sqlite3_open(file.c_str(), &raw);
  sqlite3_stmt* query = nullptr;
  sqlite3_prepare_v2(raw, "SELECT version FROM schema_version", -1, &query, nullptr);
  const int64_t version = sqlite3_step(query) == SQLITE_ROW ? sqlite3_column_int64(query, 0) : -1;
  sqlite3_finalize(query);
  sqlite3_close(raw);
  return version;
}

class SchemaUpgrade : public ::testing::TestWithParam<int64_t> {};

TEST_P(SchemaUpgrade, AnOlderWorkspaceGainsTheNewerTablesOnOpen) {
  static_assert(kStoreSchemaVersion == std::size(kUndoVersion));
  TempDir dir;
  const auto file = dir / "kernelarc.db";
  int64_t run = 0;
  int64_t old_candidate = 0;
  {
    Database db(file);
    run = db.create_run(sample_run());
    old_candidate = db.add_candidate(run, sample_candidate("explore", "key"));
  }
  downgrade(file, GetParam());
  ASSERT_EQ(raw_version(file), GetParam());

  Database db(file);
  EXPECT_EQ(raw_version(file), kStoreSchemaVersion);
  EXPECT_EQ(db.find_candidate(old_candidate)->note, "");
  NewCandidate noted = sample_candidate("memory", "key");
  noted.note = "diagnosis: raise VEC";
  const int64_t candidate = db.add_candidate(run, noted);
  EXPECT_EQ(db.find_candidate(candidate)->note, "diagnosis: raise VEC");
  db.record_synthesis(candidate, {"llm", "model", "0123abcd", "", 1, 2, 0.5, false});
  EXPECT_TRUE(db.synthesis_of(candidate));
  db.record_profile({candidate, "w-large", {{"unavailable", "no ncu"}}, ""});
  EXPECT_EQ(db.profiles_of(run).size(), 1u);
  // The run kept its row and its candidates, has no owner on record, and may now be stopped.
  const auto old_run = db.find_run(run);
  ASSERT_TRUE(old_run);
  EXPECT_EQ(old_run->problem_name, sample_run().problem_name);
  EXPECT_EQ(db.candidates_of(run).size(), 2u);
  EXPECT_FALSE(old_run->owner);
  EXPECT_EQ(shown_run_status(*old_run), "running");
  db.finish_run(run, RunStatus::Stopped);
  EXPECT_EQ(db.find_run(run)->status, RunStatus::Stopped);
}

INSTANTIATE_TEST_SUITE_P(FromEachVersion, SchemaUpgrade,
                         ::testing::Range(int64_t{1}, kStoreSchemaVersion));

}  // namespace
}  // namespace kernelarc
