#include "codesynth/response_parser.h"

#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <vector>

namespace kernelarc {
namespace {

const std::string kKernel = "#include \"kernelarc/abi.h\"\nint ka_run() { return 0; }\n";

const std::vector<SourceFile> kParent = {
    {"kernel.cu",
     "#include \"helper.h\"\nconstexpr int kThreads = 256;\nint f() { return 1; }\n"
     "int g() { return 1; }"},
    {"helper.h", "#pragma once\n#define HELPER 1\n"},
};

ParsedAnswer draft(const std::string& text) {
  return parse_answer(text, nullptr, "kernel.cu");
}

ParsedAnswer edit(const std::string& text) {
  return parse_answer(text, &kParent, "kernel.cu");
}

const std::string& content_of(const ParsedAnswer& answer, const std::string& path) {
  for (const SourceFile& file : answer.sources)
    if (file.path == path) return file.content;
  static const std::string kMissing = "<missing>";
  return kMissing;
}

TEST(ResponseParser, WholeFileNamedInTheInfoString) {
  const ParsedAnswer answer =
      draft("Plan: one block per row.\n\n```cuda kernel.cu\n" + kKernel + "```\n\nThat is all.");
  ASSERT_TRUE(answer.ok()) << answer.failure;
  ASSERT_EQ(answer.sources.size(), 1u);
  EXPECT_EQ(answer.sources[0].path, "kernel.cu");
  EXPECT_EQ(answer.sources[0].content, kKernel);
  EXPECT_FALSE(answer.cflags || answer.cuda_cflags || answer.ld_flags);
}

TEST(ResponseParser, FileKeyTildeFencesAndCrlf) {
  const ParsedAnswer answer =
      draft("~~~cpp file=main.cpp\r\nint ka_run() { return 0; }\r\n~~~\r\n");
  ASSERT_TRUE(answer.ok()) << answer.failure;
  ASSERT_EQ(answer.sources.size(), 1u);
  EXPECT_EQ(answer.sources[0].path, "main.cpp");
  EXPECT_EQ(answer.sources[0].content, "int ka_run() { return 0; }\n");
}

TEST(ResponseParser, SingleUnnamedBlockIsTheDefaultFile) {
  const ParsedAnswer answer = draft("```cuda\n" + kKernel + "```");
  ASSERT_TRUE(answer.ok()) << answer.failure;
  ASSERT_EQ(answer.sources.size(), 1u);
  EXPECT_EQ(answer.sources[0].path, "kernel.cu");
}

TEST(ResponseParser, PathOnTheLineAboveNamesTheBlock) {
  const ParsedAnswer answer = draft("**kernel.cu**\n```cuda\n" + kKernel +
                                    "```\n### `util.cuh`:\n```\n#pragma once\n```\n");
  ASSERT_TRUE(answer.ok()) << answer.failure;
  ASSERT_EQ(answer.sources.size(), 2u);
  EXPECT_EQ(content_of(answer, "kernel.cu"), kKernel);
  EXPECT_EQ(content_of(answer, "util.cuh"), "#pragma once\n");
}

TEST(ResponseParser, UnnamedBlocksBesideNamedFilesAreIgnored) {
  const ParsedAnswer answer =
      draft("```cuda kernel.cu\n" + kKernel + "```\nBuild with:\n```bash\nnvcc -O3 x.cu\n```\n");
  ASSERT_TRUE(answer.ok()) << answer.failure;
  ASSERT_EQ(answer.sources.size(), 1u);
}

TEST(ResponseParser, WholeFileReplacesThatParentFileAndKeepsTheOthers) {
  const ParsedAnswer answer =
      edit("```cuda kernel.cu\n" + kKernel + "```\n```cpp extra.h\n#define EXTRA 2\n```\n");
  ASSERT_TRUE(answer.ok()) << answer.failure;
  ASSERT_EQ(answer.sources.size(), 3u);
  EXPECT_EQ(answer.sources[0].path, "kernel.cu");
  EXPECT_EQ(answer.sources[0].content, kKernel);
  EXPECT_EQ(answer.sources[1].path, "helper.h");
  EXPECT_EQ(answer.sources[1].content, kParent[1].content);
  EXPECT_EQ(answer.sources[2].path, "extra.h");
}

TEST(ResponseParser, EditsApplyInOrderInsideAndOutsideFences) {
  const ParsedAnswer answer = edit(
      "Halve the block.\n```cuda\n<<<<<<< SEARCH kernel.cu\nconstexpr int kThreads = 256;\n"
      "=======\nconstexpr int kThreads = 128;\n>>>>>>> REPLACE\n```\n"
      "<<<<<<< SEARCH helper.h\n#define HELPER 1\n=======\n#define HELPER 2\n>>>>>>> REPLACE\n");
  ASSERT_TRUE(answer.ok()) << answer.failure;
  ASSERT_EQ(answer.sources.size(), 2u);
  EXPECT_EQ(answer.sources[0].content,
            "#include \"helper.h\"\nconstexpr int kThreads = 128;\nint f() { return 1; }\n"
            "int g() { return 1; }");
  EXPECT_EQ(answer.sources[1].content, "#pragma once\n#define HELPER 2\n");
}

TEST(ResponseParser, EditWithoutPathTargetsTheDefaultFileAndMatchesTheLastLine) {
  const ParsedAnswer answer = edit(
      "<<<<<<< SEARCH\nint g() { return 1; }\n=======\nint g() { return 2; }\n"
      ">>>>>>> REPLACE\n");
  ASSERT_TRUE(answer.ok()) << answer.failure;
  EXPECT_TRUE(answer.sources[0].content.ends_with("int g() { return 2; }"))
      << answer.sources[0].content;
}

TEST(ResponseParser, EmptySearchCreatesANewFile) {
  const ParsedAnswer answer =
      edit("<<<<<<< SEARCH tile.cuh\n=======\n#pragma once\n>>>>>>> REPLACE\n");
  ASSERT_TRUE(answer.ok()) << answer.failure;
  ASSERT_EQ(answer.sources.size(), 3u);
  EXPECT_EQ(content_of(answer, "tile.cuh"), "#pragma once\n");
}

TEST(ResponseParser, JsonSolutionBlockSetsFlags) {
  const ParsedAnswer answer =
      draft("```cuda kernel.cu\n" + kKernel +
            "```\n```json solution\n{\"cuda_cflags\": [\"-O3\", \"-lineinfo\"], \"ld_flags\": []}\n"
            "```\n");
  ASSERT_TRUE(answer.ok()) << answer.failure;
  ASSERT_EQ(answer.sources.size(), 1u);
  EXPECT_FALSE(answer.cflags);
  ASSERT_TRUE(answer.cuda_cflags);
  EXPECT_EQ(*answer.cuda_cflags, (std::vector<std::string>{"-O3", "-lineinfo"}));
  ASSERT_TRUE(answer.ld_flags);
  EXPECT_TRUE(answer.ld_flags->empty());
}

TEST(ResponseParser, ThinkSectionIsSkipped) {
  const ParsedAnswer answer =
      draft("<think>\nMaybe:\n```cuda draft.cu\nint x;\n```\n</think>\n```cuda kernel.cu\n" +
            kKernel + "```\n");
  ASSERT_TRUE(answer.ok()) << answer.failure;
  ASSERT_EQ(answer.sources.size(), 1u);
  EXPECT_EQ(answer.sources[0].path, "kernel.cu");
}

struct Rejection {
  const char* name;
  std::string text;
  bool with_parent;
  std::string reason;
};

void PrintTo(const Rejection& rejection, std::ostream* out) {
  *out << rejection.name;
}

class ResponseParserRejects : public ::testing::TestWithParam<Rejection> {};

TEST_P(ResponseParserRejects, WithItsReason) {
  const Rejection& rejection = GetParam();
  const ParsedAnswer answer = rejection.with_parent ? edit(rejection.text) : draft(rejection.text);
  EXPECT_FALSE(answer.ok());
  EXPECT_TRUE(answer.sources.empty());
  EXPECT_EQ(answer.failure, rejection.reason);
}

INSTANTIATE_TEST_SUITE_P(
    ResponseParser, ResponseParserRejects,
    ::testing::Values(
        Rejection{"Empty", " \n\t\n", false, "the answer is empty"},
        Rejection{"ProseOnly", "I would keep the row in registers and use 16-byte loads.", false,
                  "the answer holds no code block"},
        Rejection{"FlagsOnly", "```json solution\n{\"cflags\": []}\n```", false,
                  "the answer holds no code block"},
        Rejection{"Truncated", "Plan.\n```cuda kernel.cu\n#include <x>\nint ka_run() {", false,
                  "the answer was cut off: the code block opened at line 2 is never closed"},
        Rejection{"TruncatedEdit", "<<<<<<< SEARCH kernel.cu\nint f() { return 1; }\n=======\n",
                  true,
                  "the answer was cut off: the SEARCH/REPLACE edit at line 1 is never closed"},
        Rejection{"TruncatedThink", "<think>\nFirst, the row length", false,
                  "the answer was cut off inside its <think> section, before any code"},
        Rejection{"SearchMissing",
                  "<<<<<<< SEARCH kernel.cu\nint h() { return 1; }\n=======\nint h();\n"
                  ">>>>>>> REPLACE\n",
                  true,
                  "edit 1 (line 1) of kernel.cu: the SEARCH text is not in the file (it begins "
                  "\"int h() { return 1; }\")"},
        Rejection{"SearchAmbiguous",
                  "<<<<<<< SEARCH kernel.cu\n return 1; }\n=======\n return 3; }\n"
                  ">>>>>>> REPLACE\n",
                  true,
                  "edit 1 (line 1) of kernel.cu: the SEARCH text occurs 2 times in the file; it "
                  "must occur once (it begins \"return 1; }\")"},
        Rejection{"EditWithoutParent",
                  "<<<<<<< SEARCH kernel.cu\nint f();\n=======\nint g();\n>>>>>>> REPLACE\n", false,
                  "the answer edits kernel.cu, but there is no parent to edit: a draft gives "
                  "whole files"},
        Rejection{"EditOfUnknownFile",
                  "<<<<<<< SEARCH main.cpp\nint f();\n=======\nint g();\n>>>>>>> REPLACE\n", true,
                  "edit 1 (line 1) of main.cpp: the parent has no such file (it has kernel.cu, "
                  "helper.h)"},
        Rejection{"EmptySearchOfExistingFile",
                  "<<<<<<< SEARCH helper.h\n=======\nint g();\n>>>>>>> REPLACE\n", true,
                  "edit 1 (line 1) of helper.h: the SEARCH text is empty, but the file exists (an "
                  "empty SEARCH creates a new file)"},
        Rejection{"ProseInABlock", "```\nSorry, I cannot write this kernel.\n```\n", false,
                  "the block for kernel.cu is not code (no ';', brace or preprocessor line): "
                  "prose where code was expected"},
        Rejection{"EmptyBlock", "```cuda kernel.cu\n\n```\n", false,
                  "the code block for kernel.cu is empty"},
        Rejection{"SeveralUnnamedBlocks", "```cuda\nint a;\n```\n```cuda\nint b;\n```\n", false,
                  "the answer holds 2 code blocks and names none of them; name each file in its "
                  "info string (```cuda kernel.cu)"},
        Rejection{"FileGivenTwice",
                  "```cuda kernel.cu\nint a;\n```\n```cuda kernel.cu\nint b;\n```", false,
                  "the answer gives kernel.cu twice"},
        Rejection{"WholeAndEdited",
                  "```cuda kernel.cu\nint a;\n```\n<<<<<<< SEARCH kernel.cu\nint f() { return 1; "
                  "}\n=======\nint f();\n>>>>>>> REPLACE\n",
                  true, "the answer both gives kernel.cu whole and edits it"},
        Rejection{"UnknownFlagKey",
                  "```cuda kernel.cu\nint a;\n```\n```json solution\n{\"cxxflags\": []}\n```\n",
                  false,
                  "the json solution block: unknown key \"cxxflags\" (expected cflags, "
                  "cuda_cflags or ld_flags)"},
        Rejection{"FlagsNotStrings",
                  "```cuda kernel.cu\nint a;\n```\n```json solution\n{\"cflags\": [3]}\n```\n",
                  false, "the json solution block: cflags: expected a list of strings"}),
    [](const ::testing::TestParamInfo<Rejection>& info) { return std::string(info.param.name); });

TEST(ResponseParser, MalformedFlagsJsonNamesItsLine) {
  const ParsedAnswer answer =
      draft("```cuda kernel.cu\nint a;\n```\n```json solution\n{\"cflags\": [\n```\n");
  EXPECT_TRUE(answer.failure.starts_with("the json solution block at line 4 is not valid JSON"))
      << answer.failure;
}

}  // namespace
}  // namespace kernelarc
