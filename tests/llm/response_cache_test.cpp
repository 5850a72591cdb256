#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "core/test_support.h"
#include "fake_model_server.h"
#include "llm/http_chat_client.h"
#include "llm/response_cache.h"

namespace kernelarc {
namespace {

using testing::FakeModelServer;
using testing::openai_answer;
using testing::TempDir;

constexpr const char* kKeyVariable = "KERNELARC_TEST_CACHE_KEY";
constexpr const char* kKey = "sk-cache-91d2e0b7-DO-NOT-LEAK";

ModelConfig model_at(const std::string& endpoint) {
  ModelConfig model;
  model.name = "cached";
  model.provider = "openai";
  model.endpoint = endpoint;
  model.model = "model-x";
  model.api_key_env = kKeyVariable;
  model.timeout_s = 2;
  model.retries = 0;
  model.backoff_s = 0.001;
  return model;
}

const ChatRequest kRequest{"system", {{"user", "write a kernel"}}};

std::string read_all(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

class ResponseCacheTest : public ::testing::Test {
 protected:
  void SetUp() override { ::setenv(kKeyVariable, kKey, 1); }
  void TearDown() override { ::unsetenv(kKeyVariable); }
  TempDir dir_;
};

TEST_F(ResponseCacheTest, RecordThenReplayWithoutAServer) {
  ChatResult recorded;
  std::string endpoint;
  {
    FakeModelServer server;
    endpoint = server.endpoint();
    server.script({{200, openai_answer("cached code", "stop", 100, 50), {}, 0}});
    CachingChatClient client(std::make_unique<HttpChatClient>(), dir_.path(), CacheMode::Record);
    recorded = client.complete(model_at(endpoint), kRequest);
    ASSERT_TRUE(recorded.response) << recorded.failure;
    EXPECT_FALSE(recorded.from_cache);
    EXPECT_EQ(recorded.attempts, 1);
    // A second identical request is answered from the cache: the server has one reply only.
    const ChatResult again = client.complete(model_at(endpoint), kRequest);
    ASSERT_TRUE(again.response) << again.failure;
    EXPECT_TRUE(again.from_cache);
    EXPECT_EQ(again.attempts, 0);
    EXPECT_EQ(server.requests().size(), 1u);
  }
  CachingChatClient replay(nullptr, dir_.path(), CacheMode::Replay);
  const ChatResult replayed = replay.complete(model_at(endpoint), kRequest);
  ASSERT_TRUE(replayed.response) << replayed.failure;
  EXPECT_TRUE(replayed.from_cache);
  EXPECT_EQ(replayed.attempts, 0);
  EXPECT_EQ(replayed.failure, "");
  EXPECT_EQ(replayed.response->text, "cached code");
  EXPECT_EQ(replayed.response->finish_reason, recorded.response->finish_reason);
  EXPECT_EQ(replayed.response->input_tokens, 100);
  EXPECT_EQ(replayed.response->output_tokens, 50);
  EXPECT_EQ(replayed.response->model, "gpt-test");
  EXPECT_EQ(replayed.request_body, recorded.request_body);
  EXPECT_EQ(replayed.response_body, recorded.response_body);
  const std::string key = ResponseCache::key(model_at(endpoint), recorded.request_body);
  EXPECT_TRUE(std::filesystem::exists(dir_ / (key + ".json")));
}

TEST_F(ResponseCacheTest, AReplayMissFailsClearly) {
  CachingChatClient replay(nullptr, dir_.path(), CacheMode::Replay);
  const ChatResult result = replay.complete(model_at("http://127.0.0.1:9"), kRequest);
  EXPECT_FALSE(result.response);
  EXPECT_EQ(result.attempts, 0);
  EXPECT_EQ(result.failure, "not in the replay cache (" + dir_.path().string() +
                                "): run without --llm-replay to call the model");
  EXPECT_FALSE(result.request_body.empty());
}

TEST_F(ResponseCacheTest, FailuresAreNotStored) {
  FakeModelServer server;
  server.script({{400, R"({"error":{"message":"bad request"}})", {}, 0},
                 {200, openai_answer("second time lucky"), {}, 0}});
  CachingChatClient client(std::make_unique<HttpChatClient>(), dir_.path(), CacheMode::Record);
  EXPECT_FALSE(client.complete(model_at(server.endpoint()), kRequest).response);
  EXPECT_FALSE(std::filesystem::exists(dir_.path()) && !std::filesystem::is_empty(dir_.path()));
  const ChatResult retried = client.complete(model_at(server.endpoint()), kRequest);
  ASSERT_TRUE(retried.response) << retried.failure;
  EXPECT_FALSE(retried.from_cache);
  EXPECT_EQ(retried.response->text, "second time lucky");
}

TEST_F(ResponseCacheTest, TheKeyIsInNeitherTheHashNorTheFiles) {
  FakeModelServer server;
  server.script({{200, openai_answer("code"), {}, 0}});
  CachingChatClient client(std::make_unique<HttpChatClient>(), dir_.path(), CacheMode::Record);
  const ModelConfig model = model_at(server.endpoint());
  ASSERT_TRUE(client.complete(model, kRequest).response);
  // Another key in the variable hits the same entry.
  ::setenv(kKeyVariable, "another-key", 1);
  EXPECT_TRUE(client.complete(model, kRequest).from_cache);
  int files = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir_.path())) {
    ++files;
    EXPECT_EQ(read_all(entry.path()).find(kKey), std::string::npos) << entry.path();
    EXPECT_EQ(entry.path().extension(), ".json");  // no temporary file left behind
  }
  EXPECT_EQ(files, 1);
}

TEST_F(ResponseCacheTest, EverySettingThatShapesTheAnswerChangesTheKey) {
  const ModelConfig base = model_at("http://127.0.0.1:9");
  const std::string body = "{}";
  const std::string key = ResponseCache::key(base, body);
  EXPECT_EQ(key.size(), 32u);
  EXPECT_EQ(key, ResponseCache::key(base, body));
  ModelConfig changed = base;
  changed.temperature = 0.2;
  EXPECT_NE(ResponseCache::key(changed, body), key);
  changed = base;
  changed.max_tokens = 10;
  EXPECT_NE(ResponseCache::key(changed, body), key);
  changed = base;
  changed.endpoint = "http://127.0.0.1:10";
  EXPECT_NE(ResponseCache::key(changed, body), key);
  changed = base;
  changed.provider = "anthropic";
  EXPECT_NE(ResponseCache::key(changed, body), key);
  changed = base;
  changed.model = "model-y";
  EXPECT_NE(ResponseCache::key(changed, body), key);
  EXPECT_NE(ResponseCache::key(base, "{ }"), key);
  EXPECT_NE(ResponseCache::key(base, body, 7), key);  // another sample of the same prompt
  changed = base;
  changed.name = "renamed";
  changed.timeout_s = 99;
  changed.api_key_env = "OTHER";
  EXPECT_EQ(ResponseCache::key(changed, body), key);  // transport settings do not matter
}

TEST_F(ResponseCacheTest, ADamagedEntryIsAMiss) {
  const ModelConfig model = model_at("http://127.0.0.1:9");
  ResponseCache cache(dir_.path());
  ChatResult result;
  result.response = ChatResponse{"text", "stop", false, 1, 2, "m"};
  result.request_body = "{}";
  cache.store("k", model, result);
  ASSERT_TRUE(cache.find("k"));
  EXPECT_EQ(cache.find("k")->result.response->output_tokens, 2);
  std::ofstream(cache.path_of("k")) << "{\"response\": ";
  EXPECT_FALSE(cache.find("k"));
  EXPECT_FALSE(cache.find("absent"));
}

}  // namespace
}  // namespace kernelarc
