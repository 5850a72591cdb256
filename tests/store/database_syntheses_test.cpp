#include <gtest/gtest.h>

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

TEST(DatabaseSyntheses, StoresOnePerCandidateAndSumsARun) {
  TempDir dir;
  Database db(dir / "kernelarc.db");
  const auto [run, other_run, first, second, elsewhere] = testing::two_runs(db);
  db.record_synthesis(first, sample_synthesis("", false));
  db.record_synthesis(second, sample_synthesis("no code block in the answer", true));
  db.record_synthesis(elsewhere, sample_synthesis("", false));

  const auto stored = db.synthesis_of(second);
  ASSERT_TRUE(stored);
  EXPECT_EQ(stored->model, "model-a@openai");
  EXPECT_EQ(stored->failure, "no code block in the answer");
  EXPECT_EQ(stored->input_tokens, 1200);
  EXPECT_TRUE(stored->from_cache);
  EXPECT_FALSE(db.synthesis_of(second + 100));

  const SynthesisTotals totals = db.synthesis_totals(run);
  EXPECT_EQ(totals.calls, 2);
  EXPECT_EQ(totals.cached, 1);
  EXPECT_EQ(totals.failures, 1);
  EXPECT_EQ(totals.input_tokens, 2400);
  EXPECT_EQ(totals.output_tokens, 680);
  EXPECT_DOUBLE_EQ(totals.cost_usd, 0.5);
  EXPECT_EQ(db.synthesis_totals(other_run).calls, 1);
}

}  // namespace
}  // namespace kernelarc
