// The board and agent states.
#include "store/database.h"
#include "store/row_codec.h"
#include "store/sqlite.h"

namespace kernelarc {

int64_t Database::append_board(int64_t run_id, BoardKind kind, std::string_view text,
                               const std::vector<int64_t>& evidence) {
  sqlite::Transaction transaction(connection());
  require_run(run_id);
  connection()
      .prepare(
          "INSERT INTO board (run_id, seq, kind, text, evidence) "
          "VALUES (?1, (SELECT COALESCE(MAX(seq) + 1, 0) FROM board WHERE run_id = ?1), "
          "?2, ?3, ?4)")
      .bind(1, run_id)
      .bind(2, board_kind_name(kind))
      .bind(3, text)
      .bind(4, ids_to_json(evidence))
      .run();
  const int64_t entry_id = connection().last_insert_id();
  transaction.commit();
  return entry_id;
}

std::vector<BoardEntry> Database::board_of(int64_t run_id) {
  sqlite::Statement query = connection().prepare(
      "SELECT id, run_id, seq, kind, text, evidence, created_at FROM board WHERE run_id = ? "
      "ORDER BY seq");
  query.bind(1, run_id);
  std::vector<BoardEntry> entries;
  while (query.step()) {
    BoardEntry entry;
    entry.id = query.int64(0);
    entry.run_id = query.int64(1);
    entry.seq = query.int64(2);
    entry.kind = board_kind_column(query, 3, file());
    entry.text = query.text(4);
    entry.evidence = ids_column(query, 5, file(), "board.evidence");
    entry.created_at = query.text(6);
    entries.push_back(std::move(entry));
  }
  return entries;
}

void Database::save_agent_state(int64_t run_id, std::string_view agent,
                                const nlohmann::json& state) {
  sqlite::Transaction transaction(connection());
  require_run(run_id);
  connection()
      .prepare(
          "INSERT INTO agent_states (run_id, agent, state) VALUES (?, ?, ?) "
          "ON CONFLICT (run_id, agent) DO UPDATE SET state = excluded.state, "
          "updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')")
      .bind(1, run_id)
      .bind(2, agent)
      .bind(3, state.dump())
      .run();
  transaction.commit();
}

std::optional<nlohmann::json> Database::load_agent_state(int64_t run_id, std::string_view agent) {
  sqlite::Statement query =
      connection().prepare("SELECT state FROM agent_states WHERE run_id = ? AND agent = ?");
  if (!query.bind(1, run_id).bind(2, agent).step()) return std::nullopt;
  return json_column(query, 0, file(), "agent_states.state");
}

}  // namespace kernelarc
