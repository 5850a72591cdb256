#include <gtest/gtest.h>

#include <cstdlib>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/test_support.h"
#include "fake_model_server.h"
#include "llm/http_chat_client.h"

namespace kernelarc {
namespace {

using testing::anthropic_answer;
using testing::DeadPort;
using testing::FakeModelServer;
using testing::input_error_of;
using testing::openai_answer;
using testing::ScriptedReply;

constexpr const char* kKeyVariable = "KERNELARC_TEST_LLM_KEY";
constexpr const char* kKey = "sk-test-7f3a9c1e-DO-NOT-LEAK";

ModelConfig model_at(const std::string& endpoint, const std::string& provider = "openai") {
  ModelConfig model;
  model.name = "test-model";
  model.provider = provider;
  model.endpoint = endpoint;
  model.model = "model-x";
  model.timeout_s = 2;
  model.retries = 2;
  model.backoff_s = 0.001;
  return model;
}

const ChatRequest kRequest{"system text", {{"user", "write a kernel"}}};

// A client that records the waits between attempts instead of sleeping.
struct RecordingClient {
  std::vector<double> waits;
  HttpChatClient client{[this](double seconds) { waits.push_back(seconds); }};
};

TEST(HttpChatClient, OpenAiAnswerOverHttp) {
  FakeModelServer server;
  server.script({{200, openai_answer("first"), {}, 0}, {200, openai_answer("second"), {}, 0}});
  HttpChatClient client;
  const ModelConfig model = model_at(server.endpoint("/v1"));
  const ChatResult first = client.complete(model, kRequest);
  ASSERT_TRUE(first.response) << first.failure;
  EXPECT_EQ(first.response->text, "first");
  EXPECT_EQ(first.failure, "");
  EXPECT_EQ(first.attempts, 1);
  EXPECT_FALSE(first.from_cache);
  EXPECT_EQ(first.response_body, openai_answer("first"));
  EXPECT_EQ(client.complete(model, kRequest).response->text, "second");
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].path, "/v1/chat/completions");
  EXPECT_EQ(requests[0].body, first.request_body);
  EXPECT_EQ(requests[0].header("Content-Type"), "application/json");
  EXPECT_EQ(requests[0].header("Authorization"), "");  // no api_key_env, no key
  EXPECT_EQ(nlohmann::json::parse(requests[0].body)["messages"][0]["role"], "system");
}

TEST(HttpChatClient, AnthropicAnswerOverHttp) {
  FakeModelServer server;
  server.script({{200, anthropic_answer({"a", "b"}), {}, 0}});
  HttpChatClient client;
  const ChatResult result = client.complete(model_at(server.endpoint(), "anthropic"), kRequest);
  ASSERT_TRUE(result.response) << result.failure;
  EXPECT_EQ(result.response->text, "ab");
  EXPECT_EQ(result.response->input_tokens, 13);
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].path, "/v1/messages");
  EXPECT_EQ(requests[0].header("anthropic-version"), "2023-06-01");
  EXPECT_EQ(nlohmann::json::parse(requests[0].body)["system"], "system text");
}

TEST(HttpChatClient, RetriesA429AndHonoursRetryAfter) {
  FakeModelServer server;
  server.script({{429, R"({"error":{"message":"slow down"}})", {{"Retry-After", "7"}}, 0},
                 {200, openai_answer("done"), {}, 0}});
  RecordingClient recording;
  const ChatResult result = recording.client.complete(model_at(server.endpoint()), kRequest);
  ASSERT_TRUE(result.response) << result.failure;
  EXPECT_EQ(result.attempts, 2);
  EXPECT_EQ(recording.waits, (std::vector<double>{7.0}));
}

TEST(HttpChatClient, Retries500sWithExponentialBackoff) {
  FakeModelServer server;
  server.script(
      {{500, "internal", {}, 0}, {503, "unavailable", {}, 0}, {200, openai_answer("done"), {}, 0}});
  RecordingClient recording;
  const ChatResult result = recording.client.complete(model_at(server.endpoint()), kRequest);
  ASSERT_TRUE(result.response) << result.failure;
  EXPECT_EQ(result.response->text, "done");
  EXPECT_EQ(result.attempts, 3);
  EXPECT_EQ(recording.waits, (std::vector<double>{0.001, 0.002}));
}

TEST(HttpChatClient, GivesUpAfterTheRetries) {
  FakeModelServer server;
  server.script({{500, "down", {}, 0}, {500, "down", {}, 0}, {502, "still down", {}, 0}});
  RecordingClient recording;
  const ChatResult result = recording.client.complete(model_at(server.endpoint()), kRequest);
  EXPECT_FALSE(result.response);
  EXPECT_EQ(result.attempts, 3);
  EXPECT_EQ(result.failure, "gave up after 3 attempts: HTTP 502 from " +
                                server.endpoint("/chat/completions") + ": still down");
  EXPECT_EQ(result.response_body, "still down");
  EXPECT_EQ(server.requests().size(), 3u);
}

TEST(HttpChatClient, OtherClientErrorsFailAtOnceWithTheServersMessage) {
  FakeModelServer server;
  server.script({{400, R"({"error":{"message":"max_tokens is too large: 99999"}})", {}, 0}});
  RecordingClient recording;
  const ChatResult result = recording.client.complete(model_at(server.endpoint()), kRequest);
  EXPECT_FALSE(result.response);
  EXPECT_EQ(result.attempts, 1);
  EXPECT_TRUE(recording.waits.empty());
  EXPECT_NE(result.failure.find("HTTP 400"), std::string::npos) << result.failure;
  EXPECT_NE(result.failure.find("max_tokens is too large: 99999"), std::string::npos);
}

TEST(HttpChatClient, ASlowServerTimesOutAndIsRetried) {
  FakeModelServer server;
  server.script({{200, openai_answer("late"), {}, 1.0}, {200, openai_answer("late"), {}, 1.0}});
  ModelConfig model = model_at(server.endpoint());
  model.timeout_s = 0.1;
  model.retries = 1;
  RecordingClient recording;
  const ChatResult result = recording.client.complete(model, kRequest);
  EXPECT_FALSE(result.response);
  EXPECT_EQ(result.attempts, 2);
  EXPECT_EQ(recording.waits.size(), 1u);
  EXPECT_NE(result.failure.find("gave up after 2 attempts: cannot reach"), std::string::npos)
      << result.failure;
  EXPECT_NE(result.failure.find("Timeout"), std::string::npos) << result.failure;
}

TEST(HttpChatClient, ADeadServerIsAConnectionFailure) {
  DeadPort dead;
  ModelConfig model = model_at(dead.endpoint());
  model.retries = 1;
  RecordingClient recording;
  const ChatResult result = recording.client.complete(model, kRequest);
  EXPECT_FALSE(result.response);
  EXPECT_EQ(result.attempts, 2);
  EXPECT_NE(result.failure.find("cannot reach " + dead.endpoint() + "/chat/completions"),
            std::string::npos)
      << result.failure;
  EXPECT_NE(result.failure.find("Couldn't connect"), std::string::npos) << result.failure;
  EXPECT_EQ(result.response_body, "");
}

TEST(HttpChatClient, MalformedAndTruncatedAnswers) {
  FakeModelServer server;
  server.script({{200, "{\"choices\": [", {}, 0},
                 {200, openai_answer("half a ker", "length"), {}, 0},
                 {200, anthropic_answer({"half"}, "max_tokens"), {}, 0}});
  RecordingClient recording;
  const ChatResult malformed = recording.client.complete(model_at(server.endpoint()), kRequest);
  EXPECT_FALSE(malformed.response);
  EXPECT_EQ(malformed.attempts, 1);
  EXPECT_NE(malformed.failure.find("malformed openai response: not JSON"), std::string::npos)
      << malformed.failure;
  EXPECT_EQ(malformed.response_body, "{\"choices\": [");
  const ChatResult cut = recording.client.complete(model_at(server.endpoint()), kRequest);
  ASSERT_TRUE(cut.response) << cut.failure;
  EXPECT_TRUE(cut.response->truncated);
  EXPECT_EQ(cut.response->finish_reason, "length");
  const ChatResult cut_anthropic =
      recording.client.complete(model_at(server.endpoint(), "anthropic"), kRequest);
  ASSERT_TRUE(cut_anthropic.response) << cut_anthropic.failure;
  EXPECT_TRUE(cut_anthropic.response->truncated);
}

void expect_no_key(const ChatResult& result) {
  for (const std::string& text : {result.failure, result.request_body, result.response_body}) {
    EXPECT_EQ(text.find(kKey), std::string::npos) << text;
  }
  if (result.response) {
    EXPECT_EQ(result.response->text.find(kKey), std::string::npos);
    EXPECT_EQ(result.response->model.find(kKey), std::string::npos);
  }
}

class HttpChatClientKey : public ::testing::Test {
 protected:
  void SetUp() override { ::setenv(kKeyVariable, kKey, 1); }
  void TearDown() override { ::unsetenv(kKeyVariable); }
};

TEST_F(HttpChatClientKey, TheKeyTravelsInHeadersOnly) {
  FakeModelServer server;
  server.script({{200, openai_answer("ok"), {}, 0}, {200, anthropic_answer({"ok"}), {}, 0}});
  HttpChatClient client;
  ModelConfig openai = model_at(server.endpoint());
  openai.api_key_env = kKeyVariable;
  ModelConfig anthropic = model_at(server.endpoint(), "anthropic");
  anthropic.api_key_env = kKeyVariable;
  const ChatResult first = client.complete(openai, kRequest);
  const ChatResult second = client.complete(anthropic, kRequest);
  ASSERT_TRUE(first.response && second.response);
  expect_no_key(first);
  expect_no_key(second);
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].header("Authorization"), std::string("Bearer ") + kKey);
  EXPECT_EQ(requests[1].header("x-api-key"), kKey);
  for (const auto& request : requests) EXPECT_EQ(request.body.find(kKey), std::string::npos);
}

TEST_F(HttpChatClientKey, AKeyEchoedByTheServerIsScrubbed) {
  FakeModelServer server;
  const std::string echo =
      std::string(R"({"error":{"message":"Incorrect API key provided: )") + kKey + R"("}})";
  server.script({{401, echo, {}, 0}, {500, echo, {}, 0}, {200, echo, {}, 0}});
  ModelConfig model = model_at(server.endpoint());
  model.api_key_env = kKeyVariable;
  model.retries = 0;
  RecordingClient recording;
  const ChatResult unauthorized = recording.client.complete(model, kRequest);
  EXPECT_NE(unauthorized.failure.find("HTTP 401"), std::string::npos) << unauthorized.failure;
  EXPECT_NE(unauthorized.failure.find("Incorrect API key provided: [api key]"), std::string::npos)
      << unauthorized.failure;
  expect_no_key(unauthorized);
  expect_no_key(recording.client.complete(model, kRequest));
  const ChatResult error_object = recording.client.complete(model, kRequest);
  EXPECT_NE(error_object.failure.find("the server answered with an error"), std::string::npos);
  expect_no_key(error_object);
}

TEST_F(HttpChatClientKey, AMissingVariableIsNamed) {
  ::unsetenv(kKeyVariable);
  FakeModelServer server;
  ModelConfig model = model_at(server.endpoint());
  model.api_key_env = kKeyVariable;
  HttpChatClient client;
  const ChatResult result = client.complete(model, kRequest);
  EXPECT_FALSE(result.response);
  EXPECT_EQ(result.attempts, 0);
  EXPECT_NE(result.failure.find(std::string("environment variable ") + kKeyVariable),
            std::string::npos)
      << result.failure;
  EXPECT_TRUE(server.requests().empty());
}

TEST(HttpChatClient, AnUnusableConfigurationIsAnInputError) {
  ModelConfig model = model_at("http://127.0.0.1:9", "gemini");
  HttpChatClient client;
  EXPECT_NE(input_error_of([&] {
              client.complete(model, kRequest);
            }).find("provider: expected \"openai\" or \"anthropic\", got \"gemini\""),
            std::string::npos);
}

TEST(HttpChatClient, CallsFromSeveralThreads) {
  constexpr int kThreads = 4;
  FakeModelServer server;
  std::vector<ScriptedReply> replies;
  for (int i = 0; i < kThreads; ++i) replies.push_back({200, openai_answer("same"), {}, 0});
  server.script(replies);
  HttpChatClient client;
  const ModelConfig model = model_at(server.endpoint());
  std::vector<ChatResult> results(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i)
    threads.emplace_back([&, i] { results[i] = client.complete(model, kRequest); });
  for (std::thread& thread : threads) thread.join();
  for (const ChatResult& result : results) {
    ASSERT_TRUE(result.response) << result.failure;
    EXPECT_EQ(result.response->text, "same");
  }
  EXPECT_EQ(server.requests().size(), static_cast<std::size_t>(kThreads));
}

TEST(RetryDelay, DoublesFromBackoffAndCapsAtAMinute) {
  ModelConfig model;
  model.backoff_s = 1.5;
  EXPECT_EQ(retry_delay_s(model, 1, std::nullopt), 1.5);
  EXPECT_EQ(retry_delay_s(model, 3, std::nullopt), 6.0);
  EXPECT_EQ(retry_delay_s(model, 10, std::nullopt), 60.0);
  EXPECT_EQ(retry_delay_s(model, 3, 0.5), 0.5);
  EXPECT_EQ(retry_delay_s(model, 1, 3600.0), 60.0);
}

}  // namespace
}  // namespace kernelarc
