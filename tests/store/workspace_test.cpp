#include "store/workspace.h"

#include <gtest/gtest.h>

#include "core/test_support.h"
#include "store_test_support.h"

namespace kernelarc {
namespace {

using testing::TempDir;

TEST(Workspace, CreatesTheDatabaseAndObjectStoreAndReopensThem) {
  TempDir dir;
  const std::filesystem::path root = dir / "nested" / ".kernelarc";
  std::string key;
  {
    Workspace workspace(root);
    key = workspace.objects().put("solution");
    workspace.database().create_run(testing::sample_run());
  }
  EXPECT_TRUE(std::filesystem::is_regular_file(root / "kernelarc.db"));
  EXPECT_TRUE(std::filesystem::is_directory(root / "objects"));
  Workspace workspace(root);
  EXPECT_EQ(workspace.root(), root);
  EXPECT_EQ(workspace.objects().get(key), "solution");
  EXPECT_EQ(workspace.database().list_runs().size(), 1u);
}

TEST(Workspace, AFileInItsPlaceIsAnInputError) {
  TempDir dir;
  const std::filesystem::path file = dir.write("not_a_dir", "x");
  const std::string message = testing::input_error_of([&] { Workspace workspace(file); });
  EXPECT_NE(message.find(file.string()), std::string::npos) << message;
}

}  // namespace
}  // namespace kernelarc
