// Candidates and their evaluations.
#include <fmt/format.h>

#include "core/error.h"
#include "store/database.h"
#include "store/row_codec.h"
#include "store/sqlite.h"

namespace kernelarc {
namespace {

constexpr const char* kCandidateColumns =
    "c.id, c.run_id, c.seq, c.agent, c.parent_id, c.inspired_by, c.solution_key, c.template, "
    "c.knob_point, c.note, c.proposed_at";

Candidate candidate_from_row(const sqlite::Statement& row, const std::filesystem::path& file) {
  Candidate candidate;
  candidate.id = row.int64(0);
  candidate.run_id = row.int64(1);
  candidate.seq = row.int64(2);
  candidate.agent = row.text(3);
  candidate.parent_id = row.optional_int64(4);
  candidate.inspired_by = ids_column(row, 5, file, "candidates.inspired_by");
  candidate.solution_key = row.text(6);
  candidate.template_name = row.text(7);
  candidate.knob_point = json_column(row, 8, file, "candidates.knob_point");
  candidate.note = row.text(9);
  candidate.proposed_at = row.text(10);
  return candidate;
}

std::vector<Candidate> all_candidates(sqlite::Statement& query, const std::filesystem::path& file) {
  std::vector<Candidate> candidates;
  while (query.step()) candidates.push_back(candidate_from_row(query, file));
  return candidates;
}

}  // namespace

int64_t Database::add_candidate(int64_t run_id, const NewCandidate& candidate) {
  sqlite::Transaction transaction(connection());
  require_run(run_id);
  if (candidate.parent_id) {
    const std::optional<Candidate> parent = find_candidate(*candidate.parent_id);
    if (!parent || parent->run_id != run_id) {
      throw InputError(fmt::format("{}: parent candidate {} is not a candidate of run {}",
                                   file().string(), *candidate.parent_id, run_id));
    }
  }
  connection()
      .prepare(
          "INSERT INTO candidates (run_id, seq, agent, parent_id, inspired_by, solution_key, "
          "template, knob_point, note) "
          "VALUES (?1, (SELECT COALESCE(MAX(seq) + 1, 0) FROM candidates WHERE run_id = ?1), "
          "?2, ?3, ?4, ?5, ?6, ?7, ?8)")
      .bind(1, run_id)
      .bind(2, candidate.agent)
      .bind_nullable(3, candidate.parent_id)
      .bind(4, ids_to_json(candidate.inspired_by))
      .bind(5, candidate.solution_key)
      .bind(6, candidate.template_name)
      .bind(7, candidate.knob_point.dump())
      .bind(8, candidate.note)
      .run();
  const int64_t candidate_id = connection().last_insert_id();
  transaction.commit();
  return candidate_id;
}

std::optional<Candidate> Database::find_candidate(int64_t candidate_id) {
  sqlite::Statement query = connection().prepare(
      fmt::format("SELECT {} FROM candidates c WHERE c.id = ?", kCandidateColumns));
  if (!query.bind(1, candidate_id).step()) return std::nullopt;
  return candidate_from_row(query, file());
}

std::vector<Candidate> Database::candidates_of(int64_t run_id) {
  sqlite::Statement query = connection().prepare(fmt::format(
      "SELECT {} FROM candidates c WHERE c.run_id = ? ORDER BY c.seq", kCandidateColumns));
  query.bind(1, run_id);
  return all_candidates(query, file());
}

std::vector<Candidate> Database::unevaluated_candidates(int64_t run_id) {
  sqlite::Statement query = connection().prepare(
      fmt::format("SELECT {} FROM candidates c WHERE c.run_id = ? AND NOT EXISTS "
                  "(SELECT 1 FROM evaluations e WHERE e.candidate_id = c.id) ORDER BY c.seq",
                  kCandidateColumns));
  query.bind(1, run_id);
  return all_candidates(query, file());
}

void Database::set_candidate_solution(int64_t candidate_id, const std::string& solution_key) {
  sqlite::Transaction transaction(connection());
  if (!find_candidate(candidate_id))
    throw InputError(fmt::format("{}: candidate {} does not exist", file().string(), candidate_id));
  if (evaluation_of(candidate_id) || synthesis_of(candidate_id))
    throw InternalError(
        fmt::format("{}: candidate {} already has its program: it was answered for or evaluated",
                    file().string(), candidate_id));
  connection()
      .prepare("UPDATE candidates SET solution_key = ? WHERE id = ?")
      .bind(1, solution_key)
      .bind(2, candidate_id)
      .run();
  transaction.commit();
}

void Database::record_evaluation(int64_t candidate_id, const Evaluation& evaluation) {
  sqlite::Transaction transaction(connection());
  const std::optional<Candidate> candidate = find_candidate(candidate_id);
  if (!candidate) {
    throw InputError(fmt::format("{}: candidate {} does not exist", file().string(), candidate_id));
  }
  if (evaluation_of(candidate_id)) {
    throw InternalError(
        fmt::format("{}: candidate {} already has an evaluation", file().string(), candidate_id));
  }
  connection()
      .prepare(
          "INSERT INTO evaluations (candidate_id, status, traces_key, median_ms, ci_low_ms, "
          "ci_high_ms, sol_score) VALUES (?, ?, ?, ?, ?, ?, ?)")
      .bind(1, candidate_id)
      .bind(2, evaluation.status)
      .bind(3, evaluation.traces_key)
      .bind_nullable(4, evaluation.median_ms)
      .bind_nullable(5, evaluation.ci_low_ms)
      .bind_nullable(6, evaluation.ci_high_ms)
      .bind_nullable(7, evaluation.sol_score)
      .run();
  connection()
      .prepare("UPDATE budgets SET used = used + 1 WHERE run_id = ?")
      .bind(1, candidate->run_id)
      .run();
  transaction.commit();
}

std::optional<Evaluation> Database::evaluation_of(int64_t candidate_id) {
  sqlite::Statement query = connection().prepare(
      "SELECT status, traces_key, median_ms, ci_low_ms, ci_high_ms, sol_score, evaluated_at "
      "FROM evaluations WHERE candidate_id = ?");
  if (!query.bind(1, candidate_id).step()) return std::nullopt;
  Evaluation evaluation;
  evaluation.status = query.text(0);
  evaluation.traces_key = query.text(1);
  evaluation.median_ms = query.optional_real(2);
  evaluation.ci_low_ms = query.optional_real(3);
  evaluation.ci_high_ms = query.optional_real(4);
  evaluation.sol_score = query.optional_real(5);
  evaluation.evaluated_at = query.text(6);
  return evaluation;
}

}  // namespace kernelarc
