#include "llm/pricing.h"

#include <gtest/gtest.h>

namespace kernelarc {
namespace {

TEST(Pricing, CostIsTokensTimesPricePerMillion) {
  ModelConfig model;
  model.price_input_per_mtok = 3.0;
  model.price_output_per_mtok = 15.0;
  EXPECT_DOUBLE_EQ(call_cost_usd(model, 1'000'000, 0), 3.0);
  EXPECT_DOUBLE_EQ(call_cost_usd(model, 2000, 1000), 0.006 + 0.015);
  EXPECT_EQ(call_cost_usd(ModelConfig{}, 5000, 5000), 0.0);
}

}  // namespace
}  // namespace kernelarc
