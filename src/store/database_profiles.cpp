// Nsight Compute profiles of candidates.
#include <fmt/format.h>

#include "core/error.h"
#include "store/database.h"
#include "store/sqlite.h"

namespace kernelarc {

void Database::record_profile(const Profile& profile) {
  connection()
      .prepare(
          "INSERT INTO profiles (candidate_id, workload, record) VALUES (?, ?, ?) "
          "ON CONFLICT (candidate_id, workload) DO UPDATE SET record = excluded.record, "
          "created_at = excluded.created_at")
      .bind(1, profile.candidate_id)
      .bind(2, profile.workload)
      .bind(3, profile.record.dump())
      .run();
}

std::vector<Profile> Database::profiles_of(int64_t run_id) {
  sqlite::Statement query = connection().prepare(
      "SELECT p.candidate_id, p.workload, p.record, p.created_at FROM profiles p JOIN "
      "candidates c ON c.id = p.candidate_id WHERE c.run_id = ? ORDER BY c.seq, p.workload");
  query.bind(1, run_id);
  std::vector<Profile> profiles;
  while (query.step()) {
    Profile profile{query.int64(0), query.text(1), {}, query.text(3)};
    try {
      // Ordered: the record keeps the key order it was written with.
      profile.record = nlohmann::ordered_json::parse(query.text(2));
    } catch (const nlohmann::json::parse_error& error) {
      throw_input_error(file().string(), "profiles.record",
                        fmt::format("expected JSON: {}", error.what()));
    }
    profiles.push_back(std::move(profile));
  }
  return profiles;
}

}  // namespace kernelarc
