// Code synthesizers' records per candidate.
#include "store/database.h"
#include "store/sqlite.h"

namespace kernelarc {

void Database::record_synthesis(int64_t candidate_id, const Synthesis& synthesis) {
  connection()
      .prepare(
          "INSERT INTO syntheses (candidate_id, synthesizer, model, record_key, failure, "
          "input_tokens, output_tokens, cost_usd, from_cache) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)")
      .bind(1, candidate_id)
      .bind(2, synthesis.synthesizer)
      .bind(3, synthesis.model)
      .bind(4, synthesis.record_key)
      .bind(5, synthesis.failure)
      .bind(6, synthesis.input_tokens)
      .bind(7, synthesis.output_tokens)
      .bind(8, synthesis.cost_usd)
      .bind(9, static_cast<int64_t>(synthesis.from_cache))
      .run();
}

std::optional<Synthesis> Database::synthesis_of(int64_t candidate_id) {
  sqlite::Statement query = connection().prepare(
      "SELECT synthesizer, model, record_key, failure, input_tokens, output_tokens, cost_usd, "
      "from_cache FROM syntheses WHERE candidate_id = ?");
  if (!query.bind(1, candidate_id).step()) return std::nullopt;
  Synthesis synthesis;
  synthesis.synthesizer = query.text(0);
  synthesis.model = query.text(1);
  synthesis.record_key = query.text(2);
  synthesis.failure = query.text(3);
  synthesis.input_tokens = query.int64(4);
  synthesis.output_tokens = query.int64(5);
  synthesis.cost_usd = query.real(6);
  synthesis.from_cache = query.int64(7) != 0;
  return synthesis;
}

}  // namespace kernelarc
