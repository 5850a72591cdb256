// `kernelarc kb`, run in-process through the function that registers it.
#include <gtest/gtest.h>

#include <iostream>
#include <sstream>

#include "cli/commands.h"
#include "core/test_support.h"

namespace kernelarc {
namespace {

using testing::TempDir;

struct Output {
  int exit_code = -1;
  std::string text;
};

Output run_kb(std::vector<std::string> arguments) {
  CLI::App app;
  const CommandRunner runner = add_kb_commands(app);
  std::vector<std::string> reversed(arguments.rbegin(), arguments.rend());
  app.parse(reversed);  // CLI11 takes the arguments last-first
  std::ostringstream captured;
  std::streambuf* previous = std::cout.rdbuf(captured.rdbuf());
  Output output;
  try {
    output.exit_code = runner();
  } catch (...) {
    std::cout.rdbuf(previous);
    throw;
  }
  std::cout.rdbuf(previous);
  output.text = captured.str();
  return output;
}

TEST(KbCommand, SearchPrintsRankedHitsFromTheShippedNotes) {
  TempDir dir;
  const std::string workspace = (dir / "ws").string();
  const Output output =
      run_kb({"kb", "search", "bank", "conflicts", "--limit", "2", "--workspace", workspace});
  EXPECT_EQ(output.exit_code, 0);
  EXPECT_TRUE(output.text.starts_with("1. [")) << output.text;
  EXPECT_NE(output.text.find("builtin:shared-memory-banks"), std::string::npos) << output.text;
  EXPECT_NE(output.text.find("\n2. ["), std::string::npos) << output.text;
  EXPECT_EQ(output.text.find("\n3. ["), std::string::npos) << output.text;
  EXPECT_TRUE(std::filesystem::is_regular_file(dir / "ws" / "knowledge.sqlite"));
}

TEST(KbCommand, SearchByKeysAlone) {
  TempDir dir;
  const Output output = run_kb({"kb", "search", "--bottleneck", "launch", "--family", "rmsnorm",
                                "--workspace", (dir / "ws").string()});
  EXPECT_EQ(output.exit_code, 0);
  EXPECT_TRUE(output.text.starts_with("1. [")) << output.text;
  EXPECT_NE(output.text.find("builtin:launch-overhead"), std::string::npos) << output.text;
}

TEST(KbCommand, SearchWithoutWordsOrKeysIsAnInputError) {
  TempDir dir;
  testing::input_error_of([&] { run_kb({"kb", "search", "--workspace", (dir / "ws").string()}); });
}

TEST(KbCommand, AddThenListAndSearchTheNewNote) {
  TempDir dir;
  const auto note = dir.write("zebra.md",
                              "---\ntitle: Zebra tiling\nfamilies: [gemm]\n---\n"
                              "# Stripes\nzebra stripes tile the output\n");
  const std::string workspace = (dir / "ws").string();
  Output output = run_kb({"kb", "add", note.string(), "--workspace", workspace});
  EXPECT_EQ(output.exit_code, 0);
  EXPECT_NE(output.text.find("1 document(s)"), std::string::npos) << output.text;

  output = run_kb({"kb", "list", "--workspace", workspace});
  EXPECT_NE(output.text.find("Zebra tiling"), std::string::npos) << output.text;
  EXPECT_NE(output.text.find("builtin:vector-loads"), std::string::npos) << output.text;
  EXPECT_NE(output.text.find("9 document(s)"), std::string::npos) << output.text;

  output = run_kb({"kb", "search", "zebra", "--workspace", workspace});
  EXPECT_NE(output.text.find("Zebra tiling"), std::string::npos) << output.text;
  EXPECT_NE(output.text.find("zebra stripes tile the output"), std::string::npos) << output.text;
}

TEST(KbCommand, LongChunksAreCutToAFewLines) {
  TempDir dir;
  std::string body = "# Long\n";
  for (int line = 0; line < 20; ++line) body += "okapi line " + std::to_string(line) + "\n";
  const auto note = dir.write("long.md", body);
  const std::string workspace = (dir / "ws").string();
  run_kb({"kb", "add", note.string(), "--workspace", workspace});
  const Output output = run_kb({"kb", "search", "okapi", "--workspace", workspace});
  EXPECT_NE(output.text.find("okapi line 7\n"), std::string::npos) << output.text;
  EXPECT_EQ(output.text.find("okapi line 8\n"), std::string::npos) << output.text;
  EXPECT_NE(output.text.find("(12 more lines)"), std::string::npos) << output.text;
}

TEST(KbCommand, AWorkspaceThatIsAFileIsAnInputError) {
  TempDir dir;
  const auto file = dir.write("ws", "x");
  const std::string message = testing::input_error_of([&] {
    run_kb({"kb", "list", "--workspace", file.string()});
  });
  EXPECT_NE(message.find(file.string()), std::string::npos) << message;
}

}  // namespace
}  // namespace kernelarc
