#include <gtest/gtest.h>

#include "core/test_support.h"
#include "llm/llm_config.h"

namespace kernelarc {
namespace {

using testing::input_error_of;
using testing::TempDir;

constexpr const char* kConfig = R"({
  "models": [
    {"provider": "openai", "endpoint": "http://127.0.0.1:8000/v1", "model": "qwen-coder",
     "weight": 3, "temperature": 0.2, "max_tokens": 2048, "timeout_s": 30, "retries": 2,
     "backoff_s": 0.5, "price_input_per_mtok": 0.5, "price_output_per_mtok": 1.5},
    {"name": "claude", "provider": "anthropic", "endpoint": "https://api.anthropic.com",
     "model": "claude-sonnet", "api_key_env": "ANTHROPIC_API_KEY"}
  ],
  "budget": {"max_tokens": 100000, "max_cost_usd": 2.5},
  "repair_rounds": 2,
  "prompt_dir": "prompts"
})";

LlmConfig parse(const std::string& text) {
  return parse_llm_config(OrderedJson::parse(text), "llm.json");
}

TEST(LlmConfig, LoadsEveryField) {
  TempDir dir;
  const LlmConfig config = load_llm_config(dir.write("llm.json", kConfig));
  ASSERT_EQ(config.models.size(), 2u);
  const ModelConfig& qwen = config.models[0];
  EXPECT_EQ(qwen.name, "qwen-coder@openai");
  EXPECT_EQ(qwen.provider, "openai");
  EXPECT_EQ(qwen.endpoint, "http://127.0.0.1:8000/v1");
  EXPECT_EQ(qwen.model, "qwen-coder");
  EXPECT_EQ(qwen.api_key_env, "");
  EXPECT_EQ(qwen.weight, 3);
  EXPECT_EQ(qwen.temperature, 0.2);
  EXPECT_EQ(qwen.max_tokens, 2048);
  EXPECT_EQ(qwen.timeout_s, 30);
  EXPECT_EQ(qwen.retries, 2);
  EXPECT_EQ(qwen.backoff_s, 0.5);
  EXPECT_EQ(qwen.price_input_per_mtok, 0.5);
  EXPECT_EQ(qwen.price_output_per_mtok, 1.5);
  const ModelConfig& claude = config.models[1];
  const ModelConfig defaults;
  EXPECT_EQ(claude.name, "claude");
  EXPECT_EQ(claude.api_key_env, "ANTHROPIC_API_KEY");
  EXPECT_EQ(claude.weight, defaults.weight);
  EXPECT_EQ(claude.max_tokens, defaults.max_tokens);
  EXPECT_EQ(claude.retries, defaults.retries);
  EXPECT_EQ(config.max_tokens_total, 100000);
  EXPECT_EQ(config.max_cost_usd, 2.5);
  EXPECT_EQ(config.repair_rounds, 2);
  EXPECT_EQ(config.prompt_dir, dir.path() / "prompts");  // relative to the file
}

TEST(LlmConfig, MinimalConfigHasNoBudget) {
  const LlmConfig config =
      parse(R"({"models": [{"provider": "openai", "endpoint": "http://h/v1", "model": "m"}]})");
  EXPECT_FALSE(config.max_tokens_total);
  EXPECT_FALSE(config.max_cost_usd);
  EXPECT_EQ(config.repair_rounds, 1);
  EXPECT_TRUE(config.prompt_dir.empty());
}

TEST(LlmConfig, AcceptsPlainJsonToo) {
  const nlohmann::json json = {
      {"models", {{{"provider", "anthropic"}, {"endpoint", "https://x"}, {"model", "c"}}}}};
  EXPECT_EQ(parse_llm_config(json, "llm.json").models[0].name, "c@anthropic");
}

TEST(LlmConfig, BadFilesNameTheField) {
  const std::string good = R"("provider": "openai", "endpoint": "http://h/v1", "model": "m")";
  const std::string second = R"({"models": [{)" + good + R"(}, {)";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {second + R"("provider": "foo", "endpoint": "http://h", "model": "m"}]})",
       R"(llm.json: models[1].provider: expected "openai" or "anthropic", got "foo")"},
      {R"({"models": [{)" + good + R"(, "colour": "red"}]})",
       "llm.json: models[0].colour: unknown field"},
      {R"({"models": [{)" + good + R"(}], "extra": 1})", "llm.json: extra: unknown field"},
      {R"({"models": [{)" + good + R"(, "weight": "heavy"}]})",
       "llm.json: models[0].weight: expected number, got string \"heavy\""},
      {R"({"models": [{)" + good + R"(, "weight": -1}]})",
       "llm.json: models[0].weight: expected a non-negative number, got integer -1"},
      {R"({"models": [{)" + good + R"(, "weight": 0}]})", "llm.json: models: every weight is zero"},
      {second + R"("provider": "openai", "endpoint": "", "model": "m"}]})",
       "llm.json: models[1].endpoint: expected an http:// or https:// URL"},
      {second + R"("provider": "openai", "endpoint": "http://", "model": "m"}]})",
       "llm.json: models[1].endpoint: expected an http:// or https:// URL"},
      {second + R"("provider": "openai", "endpoint": "http://h:99999/v1", "model": "m"}]})",
       "llm.json: models[1].endpoint: expected an http:// or https:// URL"},
      {second +
           R"("provider": "openai", "endpoint": "https://api.openai.com/v1 ", "model": "m"}]})",
       "llm.json: models[1].endpoint: expected an http:// or https:// URL"},
      {second + R"("provider": "openai", "endpoint": "http://h", "model": ""}]})",
       "llm.json: models[1].model: must not be empty"},
      {R"({"models": [{"provider": "openai", "model": "m"}]})",
       "llm.json: models[0].endpoint: missing required field"},
      {R"({"models": [{)" + good + R"(, "max_tokens": 0}]})",
       "llm.json: models[0].max_tokens: expected a positive integer, got integer 0"},
      {R"({"models": [{)" + good + R"(, "max_tokens": 1.5}]})",
       "llm.json: models[0].max_tokens: expected integer, got number 1.5"},
      {R"({"models": [{)" + good + R"(, "timeout_s": 0}]})",
       "llm.json: models[0].timeout_s: expected a positive number"},
      {R"({"models": [{)" + good + R"(, "retries": -2}]})",
       "llm.json: models[0].retries: expected a non-negative integer"},
      {R"({"models": [{)" + good + R"(, "price_output_per_mtok": -3}]})",
       "llm.json: models[0].price_output_per_mtok: expected a non-negative number"},
      {R"({"models": [{)" + good + R"(, "api_key_env": "sk-live-abc"}]})",
       "llm.json: models[0].api_key_env: expected the name of an environment variable"},
      {R"({"models": [{)" + good + R"(}, {)" + good + R"(}]})",
       "llm.json: models[1].name: \"m@openai\" names another model too"},
      {R"({"models": []})", "llm.json: models: expected a non-empty array, got array"},
      {R"({"models": {}})", "llm.json: models: expected a non-empty array, got object"},
      {R"({})", "llm.json: models: missing required field"},
      {R"([])", "llm.json: expected object, got array"},
      {R"({"models": [{)" + good + R"(}], "budget": {"max_tokens": -5}})",
       "llm.json: budget.max_tokens: expected a positive integer, got integer -5"},
      {R"({"models": [{)" + good + R"(}], "budget": {"max_cost_usd": 0}})",
       "llm.json: budget.max_cost_usd: expected a positive number"},
      {R"({"models": [{)" + good + R"(}], "budget": {"dollars": 3}})",
       "llm.json: budget.dollars: unknown field"},
      {R"({"models": [{)" + good + R"(}], "repair_rounds": -1})",
       "llm.json: repair_rounds: expected a non-negative integer"},
      {R"({"models": [{)" + good + R"(}], "prompt_dir": 3})",
       "llm.json: prompt_dir: expected string"},
  };
  for (const auto& [text, expected] : cases) {
    const std::string message = input_error_of([&] { parse(text); });
    EXPECT_TRUE(message.starts_with(expected)) << "got: " << message << "\nfor: " << text;
  }
}

TEST(LlmConfig, ALiteralKeyIsRefusedWithoutRepeatingIt) {
  const std::string message = input_error_of([] {
    parse(R"({"models": [{"provider": "openai", "endpoint": "http://h", "model": "m",
              "api_key": "sk-secret-123"}]})");
  });
  EXPECT_TRUE(message.starts_with("llm.json: models[0].api_key: ")) << message;
  EXPECT_NE(message.find("api_key_env"), std::string::npos) << message;
  EXPECT_EQ(message.find("sk-secret-123"), std::string::npos) << message;
  const std::string pasted = input_error_of([] {
    parse(R"({"models": [{"provider": "openai", "endpoint": "http://h", "model": "m",
              "api_key_env": "sk-secret-123"}]})");
  });
  EXPECT_EQ(pasted.find("sk-secret-123"), std::string::npos) << pasted;
}

TEST(LlmConfig, AMissingOrBrokenFileIsNamed) {
  TempDir dir;
  EXPECT_NE(input_error_of([&] { load_llm_config(dir / "absent.json"); }).find("absent.json"),
            std::string::npos);
  const auto broken = dir.write("broken.json", "{\"models\": [");
  EXPECT_NE(input_error_of([&] { load_llm_config(broken); }).find("broken.json: invalid JSON"),
            std::string::npos);
}

TEST(LlmConfig, ModelFromFlags) {
  const ModelConfig model =
      model_from_flags("anthropic", "https://api.anthropic.com", "claude-x", "ANTHROPIC_API_KEY");
  EXPECT_EQ(model.name, "claude-x@anthropic");
  EXPECT_EQ(model.provider, "anthropic");
  EXPECT_EQ(model.endpoint, "https://api.anthropic.com");
  EXPECT_EQ(model.api_key_env, "ANTHROPIC_API_KEY");
  EXPECT_EQ(model.weight, 1.0);
  EXPECT_EQ(input_error_of([] { model_from_flags("foo", "http://h", "m", ""); }),
            R"(command line: --llm-provider: expected "openai" or "anthropic", got "foo")");
  EXPECT_TRUE(input_error_of([] {
                model_from_flags("openai", "h:8000", "m", "");
              }).starts_with("command line: --llm-endpoint: expected an http:// or https:// URL"));
  EXPECT_EQ(input_error_of([] { model_from_flags("openai", "http://h", "", ""); }),
            "command line: --llm-model: must not be empty");
  EXPECT_TRUE(input_error_of([] {
                model_from_flags("openai", "http://h", "m", "a key");
              }).starts_with("command line: --llm-api-key-env: "));
}

}  // namespace
}  // namespace kernelarc
