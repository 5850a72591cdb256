#include "store/sqlite.h"

#include <fmt/format.h>

#include "core/error.h"

namespace kernelarc::sqlite {

Connection::Connection(const std::filesystem::path& file) : file_(file) {
  sqlite3* db = nullptr;
  const int code = sqlite3_open_v2(
      file.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  db_.reset(db);  // sqlite3_open_v2 hands back a handle even on failure; it must be closed
  if (code != SQLITE_OK) {
    throw InputError(fmt::format("{}: cannot open the database: {}", file.string(),
                                 db ? sqlite3_errmsg(db) : sqlite3_errstr(code)));
  }
  sqlite3_extended_result_codes(db, 1);
}

void Connection::check(int code, std::string_view what) const {
  if (code == SQLITE_OK || code == SQLITE_ROW || code == SQLITE_DONE) return;
  const int primary = code & 0xFF;
  if (primary == SQLITE_NOTADB || primary == SQLITE_CORRUPT || primary == SQLITE_CANTOPEN) {
    throw InputError(fmt::format("{}: not a readable kernelarc database ({}: {})", file_.string(),
                                 what, sqlite3_errmsg(db_.get())));
  }
  throw InternalError(fmt::format("{}: {}: {}", file_.string(), what, sqlite3_errmsg(db_.get())));
}

Statement Connection::prepare(std::string_view sql) {
  sqlite3_stmt* statement = nullptr;
  check(
      sqlite3_prepare_v2(db_.get(), sql.data(), static_cast<int>(sql.size()), &statement, nullptr),
      fmt::format("preparing \"{}\"", sql));
  return Statement(*this, statement);
}

void Connection::execute(std::string_view sql) {
  prepare(sql).run();
}

void Connection::configure_shared() {
  execute("PRAGMA busy_timeout = 10000");
  execute("PRAGMA foreign_keys = ON");
  Statement mode = prepare("PRAGMA journal_mode = WAL");
  if (!mode.step() || mode.text(0) != "wal")
    throw InternalError(fmt::format("{}: cannot switch the database to WAL mode", file_.string()));
}

int64_t Connection::last_insert_id() const {
  return sqlite3_last_insert_rowid(db_.get());
}

Statement::Statement(const Connection& connection, sqlite3_stmt* statement)
    : connection_(&connection), statement_(statement) {}

Statement& Statement::bind(int index, int64_t value) {
  connection_->check(sqlite3_bind_int64(statement_.get(), index, value), "binding a parameter");
  return *this;
}

Statement& Statement::bind(int index, double value) {
  connection_->check(sqlite3_bind_double(statement_.get(), index, value), "binding a parameter");
  return *this;
}

Statement& Statement::bind(int index, std::string_view value) {
  connection_->check(sqlite3_bind_text64(statement_.get(), index, value.data(), value.size(),
                                         SQLITE_TRANSIENT, SQLITE_UTF8),
                     "binding a parameter");
  return *this;
}

namespace {

template <typename Value>
Statement& bind_optional(Statement& statement, sqlite3_stmt* raw, const Connection& connection,
                         int index, const std::optional<Value>& value) {
  if (value) return statement.bind(index, *value);
  connection.check(sqlite3_bind_null(raw, index), "binding a parameter");
  return statement;
}

}  // namespace

Statement& Statement::bind_nullable(int index, const std::optional<int64_t>& value) {
  return bind_optional(*this, statement_.get(), *connection_, index, value);
}

Statement& Statement::bind_nullable(int index, const std::optional<double>& value) {
  return bind_optional(*this, statement_.get(), *connection_, index, value);
}

Statement& Statement::bind_nullable(int index, const std::optional<std::string>& value) {
  return bind_optional(*this, statement_.get(), *connection_, index, value);
}

bool Statement::step() {
  const int code = sqlite3_step(statement_.get());
  connection_->check(code, fmt::format("running \"{}\"", sqlite3_sql(statement_.get())));
  return code == SQLITE_ROW;
}

void Statement::run() {
  while (step()) {
  }
}

bool Statement::is_null(int column) const {
  return sqlite3_column_type(statement_.get(), column) == SQLITE_NULL;
}

int64_t Statement::int64(int column) const {
  return sqlite3_column_int64(statement_.get(), column);
}

double Statement::real(int column) const {
  return sqlite3_column_double(statement_.get(), column);
}

std::string Statement::text(int column) const {
  const auto* data = sqlite3_column_text(statement_.get(), column);
  const int size = sqlite3_column_bytes(statement_.get(), column);
  return data ? std::string(reinterpret_cast<const char*>(data), size) : std::string();
}

std::optional<int64_t> Statement::optional_int64(int column) const {
  if (is_null(column)) return std::nullopt;
  return int64(column);
}

std::optional<double> Statement::optional_real(int column) const {
  if (is_null(column)) return std::nullopt;
  return real(column);
}

std::optional<std::string> Statement::optional_text(int column) const {
  if (is_null(column)) return std::nullopt;
  return text(column);
}

Transaction::Transaction(Connection& connection) : connection_(connection) {
  connection_.execute("BEGIN IMMEDIATE");
}

Transaction::~Transaction() {
  if (!open_) return;
  try {
    connection_.execute("ROLLBACK");
  } catch (...) {  // a failed rollback leaves SQLite to roll back at close; nothing to add
  }
}

void Transaction::commit() {
  connection_.execute("COMMIT");
  open_ = false;
}

}  // namespace kernelarc::sqlite
