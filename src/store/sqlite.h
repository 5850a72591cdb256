// A thin RAII layer over the SQLite C API: a connection, prepared statements with bound
// parameters, and transactions. Values only ever reach SQL through bound parameters.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace kernelarc::sqlite {

class Statement;

class Connection {
 public:
  /// Opens (creating if needed) the database file. Unopenable → InputError naming the file.
  explicit Connection(const std::filesystem::path& file);

  Statement prepare(std::string_view sql);
  /// Runs SQL without parameters or results (pragmas, DDL, BEGIN/COMMIT).
  void execute(std::string_view sql);
  int64_t last_insert_id() const;

  const std::filesystem::path& file() const { return file_; }
  /// For a file several processes (or connections) use at once: WAL, so readers proceed beside
  /// a writer, a busy timeout long enough for another writer's few rows and short enough that a
  /// stuck one surfaces as an error, and foreign keys enforced. InternalError when WAL is refused.
  void configure_shared();
  /// Throws for a failed result code: InputError naming the file when the file is not a
  /// database or is corrupt, InternalError with sqlite3_errmsg otherwise.
  void check(int code, std::string_view what) const;

 private:
  struct Closer {
    void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
  };
  std::filesystem::path file_;
  std::unique_ptr<sqlite3, Closer> db_;
};

class Statement {
 public:
  Statement(const Connection& connection, sqlite3_stmt* statement);

  /// Binds parameter `index` (1-based); bind_nullable binds NULL for std::nullopt.
  Statement& bind(int index, int64_t value);
  Statement& bind(int index, double value);
  Statement& bind(int index, std::string_view value);
  Statement& bind_nullable(int index, const std::optional<int64_t>& value);
  Statement& bind_nullable(int index, const std::optional<double>& value);
  Statement& bind_nullable(int index, const std::optional<std::string>& value);

  /// Advances to the next row; false when there is none.
  bool step();
  /// Runs a statement that returns no rows.
  void run();

  bool is_null(int column) const;
  int64_t int64(int column) const;
  double real(int column) const;
  std::string text(int column) const;
  std::optional<int64_t> optional_int64(int column) const;
  std::optional<double> optional_real(int column) const;
  std::optional<std::string> optional_text(int column) const;

 private:
  struct Finalizer {
    void operator()(sqlite3_stmt* statement) const { sqlite3_finalize(statement); }
  };
  const Connection* connection_;
  std::unique_ptr<sqlite3_stmt, Finalizer> statement_;
};

/// BEGIN IMMEDIATE on construction (the write lock is taken up front, so two processes never
/// deadlock upgrading read locks); rolled back at destruction unless committed.
class Transaction {
 public:
  explicit Transaction(Connection& connection);
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;

  void commit();

 private:
  Connection& connection_;
  bool open_ = true;
};

}  // namespace kernelarc::sqlite
