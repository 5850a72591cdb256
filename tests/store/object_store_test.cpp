#include "store/object_store.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/hash.h"
#include "core/test_support.h"

namespace kernelarc {
namespace {

using testing::TempDir;

TEST(ObjectStore, RoundTripsBytesUnderTheirContentHash) {
  TempDir dir;
  ObjectStore objects(dir / "objects");
  const std::string bytes("binary\0payload\xff", 15);
  const std::string key = objects.put(bytes);
  EXPECT_EQ(key, content_hash(bytes));
  EXPECT_TRUE(objects.has(key));
  EXPECT_EQ(objects.get(key), bytes);
  EXPECT_EQ(objects.path_of(key), dir / "objects" / key.substr(0, 2) / key.substr(2));
  EXPECT_TRUE(std::filesystem::is_regular_file(objects.path_of(key)));
  EXPECT_EQ(objects.get(objects.put("")), "");
}

TEST(ObjectStore, LeavesOnlyObjectsBehindAndDoesNotRewriteThem) {
  TempDir dir;
  ObjectStore objects(dir / "objects");
  for (int index = 0; index < 20; ++index) objects.put("object " + std::to_string(index));
  const std::string key = objects.put("object 3");
  const auto written = std::filesystem::last_write_time(objects.path_of(key));
  EXPECT_EQ(objects.put("object 3"), key);
  EXPECT_EQ(std::filesystem::last_write_time(objects.path_of(key)), written);

  int files = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir / "objects")) {
    if (!entry.is_regular_file()) continue;
    ++files;
    const std::string name =
        entry.path().parent_path().filename().string() + entry.path().filename().string();
    EXPECT_EQ(name.size(), 32u) << "left behind: " << entry.path();
  }
  EXPECT_EQ(files, 20);
}

TEST(ObjectStore, MissingObjectIsAnInputErrorNamingItsPath) {
  TempDir dir;
  ObjectStore objects(dir / "objects");
  const std::string key = content_hash("never stored");
  EXPECT_FALSE(objects.has(key));
  const std::string message = testing::input_error_of([&] { objects.get(key); });
  EXPECT_NE(message.find(objects.path_of(key).string()), std::string::npos) << message;
  EXPECT_NE(message.find("missing"), std::string::npos) << message;
}

TEST(ObjectStore, CorruptObjectFailsHashVerification) {
  TempDir dir;
  ObjectStore objects(dir / "objects");
  const std::string key = objects.put("the original content");
  const std::filesystem::path path = objects.path_of(key);
  std::filesystem::permissions(path, std::filesystem::perms::owner_write,
                               std::filesystem::perm_options::add);
  std::ofstream(path, std::ios::binary | std::ios::trunc) << "the original c0ntent";
  const std::string message = testing::input_error_of([&] { objects.get(key); });
  EXPECT_NE(message.find(path.string()), std::string::npos) << message;
  EXPECT_NE(message.find("corrupt"), std::string::npos) << message;
}

TEST(ObjectStore, MalformedKeyIsAnInputError) {
  TempDir dir;
  ObjectStore objects(dir / "objects");
  for (const std::string& key : {std::string(), std::string("../../etc/passwd"),
                                 std::string(32, 'G'), std::string(31, 'a')}) {
    EXPECT_NE(testing::input_error_of([&] { objects.get(key); }).find("hex"), std::string::npos)
        << key;
  }
}

}  // namespace
}  // namespace kernelarc
