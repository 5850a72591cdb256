// The search's metadata: runs, their candidates and evaluations, the board, agent states and
// budgets, in one SQLite database (WAL, foreign keys on). Every write that changes more than one
// row is one transaction, so a process killed at any moment leaves all of it or none.
//
// Crash-safety rule for callers: a row that names an object store key is written after the
// object, so a row never points at a missing object.
//
// One Database per thread; several processes may open the same file (WAL, busy timeout).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "store/records.h"

namespace kernelarc {

namespace sqlite {
class Connection;
}

class Database {
 public:
  /// Opens or creates the database file. Unopenable, corrupt, or written by a newer schema →
  /// InputError naming the file.
  explicit Database(const std::filesystem::path& file);
  ~Database();
  Database(Database&&) noexcept;
  Database& operator=(Database&&) noexcept;

  const std::filesystem::path& file() const;

  /// Creates a running run, owned by this process, and its budget; returns the run id.
  int64_t create_run(const NewRun& run);
  std::optional<Run> find_run(int64_t run_id);
  /// All runs, oldest first.
  std::vector<Run> list_runs();
  /// Marks a run finished, failed or stopped (status must not be Running) and stamps
  /// finished_at.
  void finish_run(int64_t run_id, RunStatus status);
  /// Marks a run running again, owned by this process (a resume).
  void claim_run(int64_t run_id);

  /// Adds a proposed candidate with the run's next seq; returns the candidate id. The parent,
  /// when given, must be a candidate of the same run.
  int64_t add_candidate(int64_t run_id, const NewCandidate& candidate);
  std::optional<Candidate> find_candidate(int64_t candidate_id);
  /// The run's candidates by seq.
  std::vector<Candidate> candidates_of(int64_t run_id);
  /// Gives a code candidate, stored when it was proposed, the program its synthesizer wrote
  /// since. InternalError once the candidate has a synthesis record or an evaluation: a
  /// candidate's program never changes after it was answered for.
  void set_candidate_solution(int64_t candidate_id, const std::string& solution_key);
  /// The run's candidates without an evaluation, by seq: what a resumed run queues again.
  std::vector<Candidate> unevaluated_candidates(int64_t run_id);

  /// Records a finished evaluation and counts it against the run's budget, in one transaction.
  /// A candidate is evaluated once: a second record is an InternalError and changes nothing.
  void record_evaluation(int64_t candidate_id, const Evaluation& evaluation);
  std::optional<Evaluation> evaluation_of(int64_t candidate_id);

  /// Appends to the run's board (append-only: entries are never changed or removed); returns
  /// the entry id.
  int64_t append_board(int64_t run_id, BoardKind kind, std::string_view text,
                       const std::vector<int64_t>& evidence);
  /// The run's board in the order posted.
  std::vector<BoardEntry> board_of(int64_t run_id);

  /// Replaces the agent's saved state.
  void save_agent_state(int64_t run_id, std::string_view agent, const nlohmann::json& state);
  std::optional<nlohmann::json> load_agent_state(int64_t run_id, std::string_view agent);

  Budget budget_of(int64_t run_id);

  /// Links a code synthesizer's record to its candidate (once per candidate; the record's
  /// object must be stored first).
  void record_synthesis(int64_t candidate_id, const Synthesis& synthesis);
  std::optional<Synthesis> synthesis_of(int64_t candidate_id);

  /// Stores a profile of a candidate on a workload, replacing an earlier one of the same pair.
  void record_profile(const Profile& profile);
  /// The profiles of the run's candidates, by candidate seq, then workload.
  std::vector<Profile> profiles_of(int64_t run_id);

 private:
  sqlite::Connection& connection();
  /// Throws an InputError unless the run exists.
  void require_run(int64_t run_id);

  std::unique_ptr<sqlite::Connection> connection_;
};

}  // namespace kernelarc
