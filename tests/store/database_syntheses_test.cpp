#include <gtest/gtest.h>

#include "core/error.h"
#include "core/test_support.h"
#include "store/database.h"
#include "store_test_support.h"

namespace kernelarc {
namespace {

using testing::sample_candidate;
using testing::sample_run;
using testing::TempDir;

Synthesis sample_synthesis(std::string failure, bool cached) {
  return {"llm", "model-a@openai", "0123abcd", std::move(failure), 1200, 340, 0.25, cached};
}

TEST(DatabaseSyntheses, StoresOnePerCandidate) {
  TempDir dir;
  Database db(dir / "kernelarc.db");
  const auto runs = testing::two_runs(db);
  const int64_t second = runs.second;
  db.record_synthesis(runs.first, sample_synthesis("", false));
  db.record_synthesis(second, sample_synthesis("no code block in the answer", true));
  db.record_synthesis(runs.elsewhere, sample_synthesis("", false));

  const auto stored = db.synthesis_of(second);
  ASSERT_TRUE(stored);
  EXPECT_EQ(stored->model, "model-a@openai");
  EXPECT_EQ(stored->failure, "no code block in the answer");
  EXPECT_EQ(stored->input_tokens, 1200);
  EXPECT_TRUE(stored->from_cache);
  EXPECT_FALSE(db.synthesis_of(second + 100));
}

// A code candidate is stored when proposed, without a program; the program its synthesizer
// wrote follows, and can no longer change once the synthesis is recorded.
TEST(DatabaseSyntheses, AProgramWrittenLaterIsStoredOnceBeforeItsRecord) {
  TempDir dir;
  Database db(dir / "kernelarc.db");
  const auto runs = testing::two_runs(db);
  const int64_t first = runs.first;
  db.set_candidate_solution(first, "program-key");
  EXPECT_EQ(db.find_candidate(first)->solution_key, "program-key");
  EXPECT_NE(db.find_candidate(runs.second)->solution_key, "program-key");
  db.record_synthesis(first, sample_synthesis("", false));
  EXPECT_THROW(db.set_candidate_solution(first, "another-key"), InternalError);
  EXPECT_EQ(db.find_candidate(first)->solution_key, "program-key");
  EXPECT_THROW(db.set_candidate_solution(runs.elsewhere + 100, "program-key"), InputError);
}

}  // namespace
}  // namespace kernelarc
