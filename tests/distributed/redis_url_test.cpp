#include <gtest/gtest.h>

#include "distributed/redis_client.h"

namespace kernelarc {
namespace {

TEST(RedisUrl, TcpWithPortAndDatabase) {
  const RedisAddress address = parse_redis_url("redis://queue.lan:6380/2");
  EXPECT_EQ(address.host, "queue.lan");
  EXPECT_EQ(address.port, 6380);
  EXPECT_EQ(address.database, 2);
  EXPECT_TRUE(address.socket_path.empty());
}

TEST(RedisUrl, DefaultsToPort6379AndDatabase0) {
  const RedisAddress address = parse_redis_url("redis://10.0.0.7");
  EXPECT_EQ(address.host, "10.0.0.7");
  EXPECT_EQ(address.port, 6379);
  EXPECT_EQ(address.database, 0);
}

TEST(RedisUrl, UnixSocketWithDatabase) {
  const RedisAddress address = parse_redis_url("unix:///run/redis/redis.sock?db=3");
  EXPECT_EQ(address.socket_path, "/run/redis/redis.sock");
  EXPECT_EQ(address.database, 3);
  EXPECT_TRUE(address.host.empty());
}

TEST(RedisUrl, MalformedUrlsNameTheUrlAndWhatIsWrong) {
  const auto message = [](const std::string& url) {
    try {
      parse_redis_url(url);
    } catch (const InputError& error) {
      return std::string(error.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(message("http://host").find("expected redis://host[:port][/db]"), std::string::npos);
  EXPECT_NE(message("redis://host:port").find("port \"port\" is not a number"), std::string::npos);
  EXPECT_NE(message("redis://host/x").find("database \"x\""), std::string::npos);
  EXPECT_NE(message("redis://:6379").find("no host"), std::string::npos);
  EXPECT_NE(message("unix://").find("no socket path"), std::string::npos);
  EXPECT_NE(message("redis://host:-1").find("--redis redis://host:-1"), std::string::npos);
}

}  // namespace
}  // namespace kernelarc
