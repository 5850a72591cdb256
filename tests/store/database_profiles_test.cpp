#include <gtest/gtest.h>

#include "core/test_support.h"
#include "store/database.h"
#include "store_test_support.h"

namespace kernelarc {
namespace {

using testing::sample_candidate;
using testing::sample_run;
using testing::TempDir;

nlohmann::ordered_json sample_record(double dram_pct) {
  return {{"command", {"ncu", "--metrics", "dram"}},
          {"calls", 3},
          {"aggregate", {{"launches", 3}, {"dram_throughput_pct", dram_pct}}},
          {"workload", "w-large"}};
}

TEST(DatabaseProfiles, KeepsACandidatesNote) {
  TempDir dir;
  Database db(dir / "kernelarc.db");
  const int64_t run = db.create_run(sample_run());
  NewCandidate followed = sample_candidate("memory", "key");
  followed.note = "diagnosis: raise VEC (loads are 4 bytes wide)";
  const int64_t plain = db.add_candidate(run, sample_candidate("memory", "key"));
  const int64_t noted = db.add_candidate(run, followed);
  EXPECT_EQ(db.find_candidate(noted)->note, "diagnosis: raise VEC (loads are 4 bytes wide)");
  EXPECT_EQ(db.find_candidate(plain)->note, "");
  EXPECT_EQ(db.candidates_of(run).at(1).note, followed.note);
}

TEST(DatabaseProfiles, StoresOnePerCandidateAndWorkloadInTheirOrder) {
  TempDir dir;
  Database db(dir / "kernelarc.db");
  const auto [run, other_run, first, second, elsewhere] = testing::two_runs(db);
  db.record_profile({second, "w-large", sample_record(41.5), ""});
  db.record_profile({first, "w-small", sample_record(12.0), ""});
  db.record_profile({first, "w-large", {{"unavailable", "ncu was not found"}}, ""});
  db.record_profile({elsewhere, "w-large", sample_record(99.0), ""});
  // A second profile of the same candidate on the same workload replaces the first.
  db.record_profile({second, "w-large", sample_record(80.25), ""});

  const std::vector<Profile> profiles = db.profiles_of(run);
  ASSERT_EQ(profiles.size(), 3u);
  EXPECT_EQ(profiles[0].candidate_id, first);
  EXPECT_EQ(profiles[0].workload, "w-large");
  EXPECT_EQ(profiles[0].record["unavailable"], "ncu was not found");
  EXPECT_EQ(profiles[1].workload, "w-small");
  EXPECT_EQ(profiles[2].candidate_id, second);
  EXPECT_EQ(profiles[2].record, sample_record(80.25));
  EXPECT_EQ(profiles[2].record.begin().key(), "command");  // the key order survives
  EXPECT_FALSE(profiles[2].created_at.empty());
  EXPECT_EQ(db.profiles_of(other_run).size(), 1u);
  EXPECT_TRUE(db.profiles_of(other_run + 1).empty());
}

}  // namespace
}  // namespace kernelarc
