#include "store/schema.h"

#include <fmt/format.h>

#include "core/error.h"

namespace kernelarc {
namespace {

// Timestamps are UTC ISO-8601 with milliseconds, taken by SQLite at insert time.
constexpr const char* kCreateTables[] = {
    R"sql(CREATE TABLE schema_version (
      id INTEGER PRIMARY KEY CHECK (id = 1),
      version INTEGER NOT NULL))sql",
    R"sql(CREATE TABLE candidates (
      id INTEGER PRIMARY KEY,
      run_id INTEGER NOT NULL REFERENCES runs(id),
      seq INTEGER NOT NULL,
      agent TEXT NOT NULL,
      parent_id INTEGER REFERENCES candidates(id),
      inspired_by TEXT NOT NULL DEFAULT '[]',
      solution_key TEXT NOT NULL,
      template TEXT NOT NULL,
      knob_point TEXT NOT NULL,
      proposed_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
      UNIQUE (run_id, seq)))sql",
    R"sql(CREATE TABLE evaluations (
      candidate_id INTEGER PRIMARY KEY REFERENCES candidates(id),
      status TEXT NOT NULL,
      traces_key TEXT NOT NULL,
      median_ms REAL,
      ci_low_ms REAL,
      ci_high_ms REAL,
      sol_score REAL,
      evaluated_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))))sql",
    R"sql(CREATE TABLE board (
      id INTEGER PRIMARY KEY,
      run_id INTEGER NOT NULL REFERENCES runs(id),
      seq INTEGER NOT NULL,
      kind TEXT NOT NULL CHECK (kind IN ('conclusion', 'redirect')),
      text TEXT NOT NULL,
      evidence TEXT NOT NULL DEFAULT '[]',
      created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
      UNIQUE (run_id, seq)))sql",
    R"sql(CREATE TABLE agent_states (
      run_id INTEGER NOT NULL REFERENCES runs(id),
      agent TEXT NOT NULL,
      state TEXT NOT NULL,
      updated_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
      PRIMARY KEY (run_id, agent)))sql",
    R"sql(CREATE TABLE budgets (
      run_id INTEGER PRIMARY KEY REFERENCES runs(id),
      total INTEGER NOT NULL CHECK (total >= 0),
      used INTEGER NOT NULL DEFAULT 0 CHECK (used >= 0)))sql",
};

// The runs table as version 4 has it, under the name given: 'stopped' (an interrupted run) and
// the owning process (host, pid, start time) came with it.
constexpr const char* kRunsTable =
    R"sql(CREATE TABLE {} (
      id INTEGER PRIMARY KEY,
      created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
      problem_name TEXT NOT NULL,
      problem_hash TEXT NOT NULL,
      device TEXT NOT NULL,
      seed INTEGER NOT NULL,
      config TEXT NOT NULL,
      status TEXT NOT NULL DEFAULT 'running'
        CHECK (status IN ('running', 'finished', 'failed', 'stopped')),
      finished_at TEXT,
      owner_host TEXT,
      owner_pid INTEGER,
      owner_started INTEGER))sql";

// Version 4: SQLite cannot change a CHECK constraint, so the runs table is made anew and its
// rows copied (its id is every other table's reference to it, and stays).
constexpr const char* kVersion4[] = {
    "INSERT INTO runs_v4 (id, created_at, problem_name, problem_hash, device, seed, config, "
    "status, finished_at) SELECT id, created_at, problem_name, problem_hash, device, seed, "
    "config, status, finished_at FROM runs",
    "DROP TABLE runs",
    "ALTER TABLE runs_v4 RENAME TO runs",
};

// Version 2: what a code synthesizer (an LLM, a command) was asked and answered per candidate.
constexpr const char* kCreateSyntheses =
    R"sql(CREATE TABLE syntheses (
      candidate_id INTEGER PRIMARY KEY REFERENCES candidates(id),
      synthesizer TEXT NOT NULL,
      model TEXT NOT NULL,
      record_key TEXT NOT NULL,
      failure TEXT NOT NULL,
      input_tokens INTEGER NOT NULL,
      output_tokens INTEGER NOT NULL,
      cost_usd REAL NOT NULL,
      from_cache INTEGER NOT NULL))sql";

// Version 3: why a candidate was proposed, and Nsight Compute profiles of candidates (one per
// candidate and workload; a later profile replaces an earlier one).
constexpr const char* kVersion3[] = {
    "ALTER TABLE candidates ADD COLUMN note TEXT NOT NULL DEFAULT ''",
    R"sql(CREATE TABLE profiles (
      candidate_id INTEGER NOT NULL REFERENCES candidates(id),
      workload TEXT NOT NULL,
      record TEXT NOT NULL,
      created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
      PRIMARY KEY (candidate_id, workload)))sql",
};

bool has_version_table(sqlite::Connection& connection) {
  sqlite::Statement query = connection.prepare(
      "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'");
  return query.step();
}

int64_t stored_version(sqlite::Connection& connection) {
  sqlite::Statement query = connection.prepare("SELECT version FROM schema_version WHERE id = 1");
  if (!query.step()) {
    throw InputError(fmt::format("{}: schema_version: the table is empty, expected one row",
                                 connection.file().string()));
  }
  return query.int64(0);
}

}  // namespace

void ensure_store_schema(sqlite::Connection& connection) {
  // Foreign keys are off while the schema may change (SQLite ignores the switch inside a
  // transaction): version 4 drops the runs table that other tables refer to and makes it anew.
  // Whatever a migration leaves is checked before it commits.
  connection.execute("PRAGMA foreign_keys = OFF");
  struct KeysBackOn {
    sqlite::Connection& connection;
    ~KeysBackOn() { connection.execute("PRAGMA foreign_keys = ON"); }
  } keys_back_on{connection};
  // The write lock up front: two processes opening a fresh workspace at once create it once.
  sqlite::Transaction transaction(connection);
  if (!has_version_table(connection)) {
    for (const char* sql : kCreateTables) connection.execute(sql);
    connection.execute(fmt::format(kRunsTable, "runs"));
    connection.execute(kCreateSyntheses);
    for (const char* sql : kVersion3) connection.execute(sql);
    connection.prepare("INSERT INTO schema_version (id, version) VALUES (1, ?)")
        .bind(1, kStoreSchemaVersion)
        .run();
    transaction.commit();
    return;
  }
  const int64_t version = stored_version(connection);
  if (version > kStoreSchemaVersion) {
    throw InputError(fmt::format(
        "{}: schema version {} was written by a newer kernelarc; this one reads version {}",
        connection.file().string(), version, kStoreSchemaVersion));
  }
  if (version < 1) {
    throw InputError(fmt::format("{}: schema_version: expected a version >= 1, got {}",
                                 connection.file().string(), version));
  }
  if (version < 2) connection.execute(kCreateSyntheses);
  if (version < 3)
    for (const char* sql : kVersion3) connection.execute(sql);
  if (version < 4) {
    connection.execute(fmt::format(kRunsTable, "runs_v4"));
    for (const char* sql : kVersion4) connection.execute(sql);
    if (connection.prepare("PRAGMA foreign_key_check").step())
      throw InternalError(fmt::format("{}: upgrading the runs table broke a reference to it",
                                      connection.file().string()));
  }
  if (version < kStoreSchemaVersion) {
    connection.prepare("UPDATE schema_version SET version = ? WHERE id = 1")
        .bind(1, kStoreSchemaVersion)
        .run();
  }
  transaction.commit();
}

}  // namespace kernelarc
