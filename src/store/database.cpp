// Opening the database, runs and budgets.
#include "store/database.h"

#include <fmt/format.h>

#include "core/error.h"
#include "store/row_codec.h"
#include "store/schema.h"
#include "store/sqlite.h"

namespace kernelarc {
namespace {

constexpr const char* kRunColumns =
    "id, created_at, problem_name, problem_hash, device, seed, config, status, finished_at, "
    "owner_host, owner_pid, owner_started";

Run run_from_row(const sqlite::Statement& row, const std::filesystem::path& file) {
  Run run;
  run.id = row.int64(0);
  run.created_at = row.text(1);
  run.problem_name = row.text(2);
  run.problem_hash = row.text(3);
  run.device = row.text(4);
  run.seed = static_cast<uint64_t>(row.int64(5));
  run.config = json_column(row, 6, file, "runs.config");
  run.status = run_status_column(row, 7, file);
  run.finished_at = row.optional_text(8);
  if (const auto host = row.optional_text(9))
    run.owner = ProcessIdentity{*host, row.int64(10), row.int64(11)};
  return run;
}

/// Binds this process as a run's owner (host, pid, start time) from parameter `first` on.
sqlite::Statement& bind_owner(sqlite::Statement& statement, int first) {
  const ProcessIdentity owner = this_process();
  return statement.bind(first, owner.host)
      .bind(first + 1, owner.pid)
      .bind(first + 2, owner.start_ticks);
}

void configure(sqlite::Connection& connection) {
  connection.configure_shared();
  // FULL: a committed evaluation survives a power loss too, and evaluations take far longer
  // than the fsync.
  connection.execute("PRAGMA synchronous = FULL");
}

}  // namespace

Database::Database(const std::filesystem::path& file)
    : connection_(std::make_unique<sqlite::Connection>(file)) {
  configure(*connection_);
  ensure_store_schema(*connection_);
}

Database::~Database() = default;
Database::Database(Database&&) noexcept = default;
Database& Database::operator=(Database&&) noexcept = default;

const std::filesystem::path& Database::file() const {
  return connection_->file();
}

sqlite::Connection& Database::connection() {
  return *connection_;
}

void Database::require_run(int64_t run_id) {
  sqlite::Statement query = connection().prepare("SELECT 1 FROM runs WHERE id = ?");
  if (!query.bind(1, run_id).step()) {
    throw InputError(fmt::format("{}: run {} does not exist", file().string(), run_id));
  }
}

int64_t Database::create_run(const NewRun& run) {
  if (run.budget_total < 0) {
    throw InputError(fmt::format("budget: expected a total >= 0, got {}", run.budget_total));
  }
  sqlite::Transaction transaction(connection());
  sqlite::Statement insert = connection().prepare(
      "INSERT INTO runs (problem_name, problem_hash, device, seed, config, owner_host, "
      "owner_pid, owner_started) VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
  insert.bind(1, run.problem_name)
      .bind(2, run.problem_hash)
      .bind(3, run.device)
      .bind(4, static_cast<int64_t>(run.seed))
      .bind(5, run.config.dump());
  bind_owner(insert, 6).run();
  const int64_t run_id = connection().last_insert_id();
  connection()
      .prepare("INSERT INTO budgets (run_id, total, used) VALUES (?, ?, 0)")
      .bind(1, run_id)
      .bind(2, run.budget_total)
      .run();
  transaction.commit();
  return run_id;
}

std::optional<Run> Database::find_run(int64_t run_id) {
  sqlite::Statement query =
      connection().prepare(fmt::format("SELECT {} FROM runs WHERE id = ?", kRunColumns));
  if (!query.bind(1, run_id).step()) return std::nullopt;
  return run_from_row(query, file());
}

std::vector<Run> Database::list_runs() {
  sqlite::Statement query =
      connection().prepare(fmt::format("SELECT {} FROM runs ORDER BY id", kRunColumns));
  std::vector<Run> runs;
  while (query.step()) runs.push_back(run_from_row(query, file()));
  return runs;
}

void Database::finish_run(int64_t run_id, RunStatus status) {
  if (status == RunStatus::Running) {
    throw InternalError("finish_run: expected status finished, failed or stopped, got running");
  }
  sqlite::Transaction transaction(connection());
  require_run(run_id);
  connection()
      .prepare(
          "UPDATE runs SET status = ?, finished_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') "
          "WHERE id = ?")
      .bind(1, run_status_name(status))
      .bind(2, run_id)
      .run();
  transaction.commit();
}

void Database::claim_run(int64_t run_id) {
  sqlite::Transaction transaction(connection());
  require_run(run_id);
  sqlite::Statement update = connection().prepare(
      "UPDATE runs SET status = 'running', finished_at = NULL, owner_host = ?, owner_pid = ?, "
      "owner_started = ? WHERE id = ?");
  bind_owner(update, 1).bind(4, run_id).run();
  transaction.commit();
}

Budget Database::budget_of(int64_t run_id) {
  sqlite::Statement query =
      connection().prepare("SELECT total, used FROM budgets WHERE run_id = ?");
  if (!query.bind(1, run_id).step()) {
    throw InputError(fmt::format("{}: run {} does not exist", file().string(), run_id));
  }
  return Budget{query.int64(0), query.int64(1)};
}

}  // namespace kernelarc
