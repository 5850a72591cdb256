// Content by hash through a real redis-server: stored once, fetched once, checked against its
// hash; a bundle's files land where they belong and nowhere else.
#include <gtest/gtest.h>
#include <unistd.h>

#include "core/hash.h"
#include "distributed/blob_exchange.h"
#include "distributed/bundles.h"
#include "redis_server.h"

namespace kernelarc::distributed_test {
namespace {

class BlobExchangeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("kernelarc-blobs-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(BlobExchangeTest, AWorkerFetchesABlobOnceAndThenServesItFromItsCache) {
  START_REDIS(server, dir_ / "redis");
  RedisClient orchestrator_side(server.url());
  ObjectStore orchestrator_objects(dir_ / "a");
  BlobExchange published(orchestrator_side, QueueKeys{"q"}, orchestrator_objects);
  const std::string bytes("binary\0payload", 14);
  const std::string hash = published.put(bytes);
  EXPECT_EQ(hash, content_hash(bytes));

  RedisClient worker_side(server.url());
  ObjectStore worker_objects(dir_ / "b");
  BlobExchange fetched(worker_side, QueueKeys{"q"}, worker_objects);
  EXPECT_EQ(fetched.get(hash), bytes);
  EXPECT_TRUE(worker_objects.has(hash));
  // Gone from the server, still served: the worker does not fetch it again.
  worker_side.command({"DEL", QueueKeys{"q"}.blob(hash)});
  EXPECT_EQ(fetched.get(hash), bytes);
}

TEST_F(BlobExchangeTest, AMissingOrAlteredBlobIsAnErrorNamingItsKey) {
  START_REDIS(server, dir_ / "redis");
  RedisClient redis(server.url());
  ObjectStore objects(dir_ / "objects");
  BlobExchange blobs(redis, QueueKeys{"q"}, objects);
  const std::string absent = content_hash("never stored");
  EXPECT_THROW(
      {
        try {
          blobs.get(absent);
        } catch (const InternalError& error) {
          EXPECT_NE(std::string(error.what()).find("q:blob:" + absent), std::string::npos);
          EXPECT_NE(std::string(error.what()).find("missing"), std::string::npos);
          throw;
        }
      },
      InternalError);
  const std::string altered = content_hash("original");
  redis.command({"SET", QueueKeys{"q"}.blob(altered), "forged"});
  EXPECT_THROW(
      {
        try {
          blobs.get(altered);
        } catch (const InternalError& error) {
          EXPECT_NE(std::string(error.what()).find("does not match its hash"), std::string::npos);
          throw;
        }
      },
      InternalError);
  EXPECT_FALSE(objects.has(altered));
}

TEST_F(BlobExchangeTest, AProblemTravelsWithItsFilesAndWhatRecognitionAdded) {
  START_REDIS(server, dir_ / "redis");
  RedisClient redis(server.url());
  ObjectStore objects(dir_ / "objects");
  BlobExchange blobs(redis, QueueKeys{"q"}, objects);
  Problem problem = load_problem(fs::path(KERNELARC_SOURCE_DIR) / "problems/cpu/rmsnorm_f32");
  problem.definition.ext.op_family = "rmsnorm";
  problem.definition.ext.bytes = "8 * batch_size * hidden_size";
  const std::string hash = publish_problem(blobs, problem);

  ObjectStore worker_objects(dir_ / "worker-objects");
  BlobExchange worker_blobs(redis, QueueKeys{"q"}, worker_objects);
  const Problem copy = materialize_problem(worker_blobs, hash, dir_ / "problems");
  EXPECT_EQ(copy.dir, dir_ / "problems" / hash);
  EXPECT_EQ(copy.definition.name, problem.definition.name);
  EXPECT_EQ(copy.workloads.size(), problem.workloads.size());
  EXPECT_EQ(copy.definition.ext.op_family, "rmsnorm");
  EXPECT_EQ(copy.definition.ext.bytes, "8 * batch_size * hidden_size");
  EXPECT_TRUE(fs::exists(copy.dir / "solutions/naive/solution.json"));
}

TEST_F(BlobExchangeTest, ABundlePathOutsideItsFolderIsRefused) {
  START_REDIS(server, dir_ / "redis");
  RedisClient redis(server.url());
  ObjectStore objects(dir_ / "objects");
  BlobExchange blobs(redis, QueueKeys{"q"}, objects);
  const std::string payload = blobs.put("not a draw");
  for (const std::string path : {"../escaped", "/tmp/escaped", "a/../../escaped"}) {
    const std::string bundle = blobs.put(nlohmann::json{{"files", {{path, payload}}}}.dump());
    EXPECT_THROW(install_oracle_draws(blobs, bundle, dir_ / "cache" / "oracle"), InternalError)
        << path;
  }
  EXPECT_FALSE(fs::exists(dir_ / "cache" / "escaped"));
}

}  // namespace
}  // namespace kernelarc::distributed_test
