#include <gtest/gtest.h>

#include <algorithm>
#include <tuple>

#include <nlohmann/json.hpp>

#include "core/test_support.h"
#include "fake_model_server.h"
#include "llm/providers.h"

namespace kernelarc {
namespace {

using testing::anthropic_answer;
using testing::input_error_of;
using testing::openai_answer;

ModelConfig model_of(const std::string& provider) {
  ModelConfig model;
  model.name = "m";
  model.provider = provider;
  model.endpoint = "http://127.0.0.1:9/base/";
  model.model = "model-x";
  model.temperature = 0.25;
  model.max_tokens = 321;
  return model;
}

ChatRequest two_turns() {
  return {"You write kernels.", {{"user", "write one"}, {"assistant", "ok"}, {"user", "again"}}};
}

bool has_header(const std::vector<std::string>& headers, const std::string& header) {
  return std::find(headers.begin(), headers.end(), header) != headers.end();
}

TEST(Providers, OpenAiRequestPutsTheSystemFirst) {
  const ModelConfig model = model_of("openai");
  EXPECT_EQ(provider_url(model), "http://127.0.0.1:9/base/chat/completions");
  const auto body = nlohmann::json::parse(provider_request_body(model, two_turns()));
  EXPECT_EQ(body["model"], "model-x");
  EXPECT_EQ(body["max_tokens"], 321);
  EXPECT_EQ(body["temperature"], 0.25);
  EXPECT_FALSE(body.contains("system"));
  ASSERT_EQ(body["messages"].size(), 4u);
  EXPECT_EQ(body["messages"][0],
            (nlohmann::json{{"role", "system"}, {"content", "You write kernels."}}));
  EXPECT_EQ(body["messages"][3], (nlohmann::json{{"role", "user"}, {"content", "again"}}));
  const auto headers = provider_headers(model, "secret");
  EXPECT_TRUE(has_header(headers, "Authorization: Bearer secret"));
  EXPECT_EQ(provider_headers(model, "").size(), 1u);  // no key, no Authorization
}

TEST(Providers, AnthropicRequestHasATopLevelSystem) {
  const ModelConfig model = model_of("anthropic");
  EXPECT_EQ(provider_url(model), "http://127.0.0.1:9/base/v1/messages");
  const auto body = nlohmann::json::parse(provider_request_body(model, two_turns()));
  EXPECT_EQ(body["system"], "You write kernels.");
  ASSERT_EQ(body["messages"].size(), 3u);
  EXPECT_EQ(body["messages"][0]["role"], "user");
  const auto headers = provider_headers(model, "secret");
  EXPECT_TRUE(has_header(headers, "x-api-key: secret"));
  EXPECT_TRUE(has_header(headers, "anthropic-version: 2023-06-01"));
}

TEST(Providers, RequestBodyIsStableAndSurvivesInvalidUtf8) {
  const ModelConfig model = model_of("openai");
  ChatRequest request{"", {{"user", "log: \xff\xfe end"}}};
  const std::string body = provider_request_body(model, request);
  EXPECT_EQ(body, provider_request_body(model, request));
  EXPECT_NE(body.find("end"), std::string::npos);
  EXPECT_EQ(nlohmann::json::parse(body)["messages"].size(), 1u);  // no empty system message
}

TEST(Providers, ParsesOpenAiAnswers) {
  const ParsedResponse parsed = parse_provider_response("openai", openai_answer("hello", "stop"));
  ASSERT_TRUE(parsed.response) << parsed.failure;
  EXPECT_EQ(parsed.response->text, "hello");
  EXPECT_EQ(parsed.response->finish_reason, "stop");
  EXPECT_FALSE(parsed.response->truncated);
  EXPECT_EQ(parsed.response->input_tokens, 11);
  EXPECT_EQ(parsed.response->output_tokens, 7);
  EXPECT_EQ(parsed.response->model, "gpt-test");
  const ParsedResponse cut = parse_provider_response("openai", openai_answer("hel", "length"));
  ASSERT_TRUE(cut.response);
  EXPECT_TRUE(cut.response->truncated);
  // Servers without usage (some local ones) still give a response.
  const ParsedResponse bare = parse_provider_response(
      "openai", R"({"choices":[{"message":{"content":"x"},"finish_reason":null}]})");
  ASSERT_TRUE(bare.response) << bare.failure;
  EXPECT_EQ(bare.response->input_tokens, 0);
  EXPECT_EQ(bare.response->finish_reason, "");
}

TEST(Providers, ParsesAnthropicAnswersJoiningTextBlocks) {
  const ParsedResponse parsed =
      parse_provider_response("anthropic", anthropic_answer({"part one, ", "part two"}));
  ASSERT_TRUE(parsed.response) << parsed.failure;
  EXPECT_EQ(parsed.response->text, "part one, part two");
  EXPECT_EQ(parsed.response->finish_reason, "end_turn");
  EXPECT_EQ(parsed.response->input_tokens, 13);
  EXPECT_EQ(parsed.response->output_tokens, 5);
  EXPECT_EQ(parsed.response->model, "claude-test");
  const ParsedResponse mixed = parse_provider_response(
      "anthropic",
      R"({"content":[{"type":"thinking","thinking":"hmm"},{"type":"text","text":"code"}],"stop_reason":"max_tokens"})");
  ASSERT_TRUE(mixed.response) << mixed.failure;
  EXPECT_EQ(mixed.response->text, "code");
  EXPECT_TRUE(mixed.response->truncated);
}

TEST(Providers, MalformedBodiesGiveAFailureNamingWhatIsWrong) {
  const std::vector<std::tuple<std::string, std::string, std::string>> cases = {
      {"openai", "<html>bad gateway</html>", "malformed openai response: not JSON"},
      {"openai", "[1,2]", "expected a JSON object, got array"},
      {"openai", R"({"choices":[]})", "choices: expected a non-empty array"},
      {"openai", R"({"object":"x"})", "choices: missing"},
      {"openai", R"({"choices":[{"message":{"content":null}}]})",
       "choices[0].message.content: expected string, got null"},
      {"openai", R"({"choices":[{"message":{"content":"x"}}],"usage":{"prompt_tokens":"7"}})",
       "usage.prompt_tokens: expected a non-negative integer"},
      {"anthropic", R"({"content":"text"})", "content: expected array"},
      {"anthropic", R"({"content":[{"type":"text"}]})", "content[0].text: missing"},
      {"anthropic",
       R"({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})",
       "the server answered with an error: Overloaded"},
      {"openai", R"({"error":{"message":"model not found"}})",
       "the server answered with an error: model not found"},
  };
  for (const auto& [provider, body, expected] : cases) {
    const ParsedResponse parsed = parse_provider_response(provider, body);
    EXPECT_FALSE(parsed.response) << body;
    EXPECT_NE(parsed.failure.find(expected), std::string::npos) << parsed.failure;
  }
}

TEST(Providers, ErrorMessagesComeFromTheBodyAndAreShortened) {
  EXPECT_EQ(provider_error_message(R"({"error":{"message":"rate limited","type":"x"}})"),
            "rate limited");
  EXPECT_EQ(provider_error_message(R"({"error":"model 'x' not found"})"), "model 'x' not found");
  EXPECT_EQ(provider_error_message("plain text"), "plain text");
  const std::string long_message = provider_error_message(std::string(2000, 'e'));
  EXPECT_EQ(long_message, std::string(500, 'e') + "...");
}

TEST(Providers, ConfigurationCheckNamesTheField) {
  ModelConfig model = model_of("foo");
  EXPECT_EQ(input_error_of([&] { check_model_config(model, "llm.json", "models[1]"); }),
            "llm.json: models[1].provider: expected \"openai\" or \"anthropic\", got \"foo\"");
  model = model_of("openai");
  model.endpoint = "";
  EXPECT_NE(input_error_of([&] { check_model_config(model, "x", "m"); }).find("m.endpoint"),
            std::string::npos);
}

}  // namespace
}  // namespace kernelarc
