#include "kb/markdown_chunks.h"

#include <gtest/gtest.h>

#include "kb/fts_query.h"

namespace kernelarc {
namespace {

TEST(MarkdownChunks, SplitsAtHeadingsAndKeepsTheHeadingPath) {
  const auto chunks = split_markdown(
      "intro text\n# Vector loads\nwhy\n## Alignment\nmultiples\n### Pointers\nbase\n"
      "## Stores\nsame rules\n#### Deep heading stays text\nmore\n");
  ASSERT_EQ(chunks.size(), 5u);
  EXPECT_EQ(chunks[0].heading, "");
  EXPECT_EQ(chunks[0].text, "intro text");
  EXPECT_EQ(chunks[1].heading, "Vector loads");
  EXPECT_EQ(chunks[2].heading, "Vector loads > Alignment");
  EXPECT_EQ(chunks[3].heading, "Vector loads > Alignment > Pointers");
  EXPECT_EQ(chunks[4].heading, "Vector loads > Stores");
  EXPECT_EQ(chunks[4].text, "same rules\n#### Deep heading stays text\nmore");
}

TEST(MarkdownChunks, HeadingsInsideCodeFencesAreText) {
  const auto chunks = split_markdown("# A\n```\n# not a heading\n\n## nor this\n```\nafter\n");
  ASSERT_EQ(chunks.size(), 1u);
  EXPECT_EQ(chunks[0].heading, "A");
  EXPECT_EQ(chunks[0].text, "```\n# not a heading\n\n## nor this\n```\nafter");
}

TEST(MarkdownChunks, LongSectionsSplitBetweenParagraphs) {
  std::string paragraph;
  for (int i = 0; i < 100; ++i) paragraph += "word ";
  const std::string markdown = "# Long\n" + paragraph + "\n\n" + paragraph + "\n\n" + paragraph;
  const auto chunks = split_markdown(markdown, 250);
  ASSERT_EQ(chunks.size(), 2u);  // 200 words, then 100: a paragraph is never cut here
  EXPECT_EQ(chunks[0].heading, "Long");
  EXPECT_EQ(chunks[1].heading, "Long");
  EXPECT_NE(chunks[0].text.find("\n\n"), std::string::npos);
}

TEST(MarkdownChunks, AParagraphOverTheLimitIsCutBetweenWords) {
  std::string paragraph;
  for (int i = 0; i < 600; ++i) paragraph += "w" + std::to_string(i) + " ";
  const auto chunks = split_markdown(paragraph, 250);
  ASSERT_EQ(chunks.size(), 3u);
  EXPECT_TRUE(chunks[1].text.starts_with("w250 "));
  EXPECT_TRUE(chunks[2].text.ends_with("w599"));
}

// A chunk is shown whole in prompts: a long paragraph is cut after its last sentence that fits.
TEST(MarkdownChunks, ALongParagraphIsCutAtASentenceEnd) {
  std::string paragraph;
  for (int sentence = 0; sentence < 30; ++sentence) {
    for (int w = 0; w < 19; ++w) paragraph += "s" + std::to_string(sentence) + "w ";
    paragraph += "end" + std::to_string(sentence) + ". ";
  }
  const auto chunks = split_markdown(paragraph, 250);  // 20 words a sentence: 12 fit
  ASSERT_EQ(chunks.size(), 3u);
  for (const auto& chunk : chunks) EXPECT_TRUE(chunk.text.ends_with(".")) << chunk.text;
  EXPECT_TRUE(chunks[0].text.ends_with("end11.")) << chunks[0].text;
  EXPECT_TRUE(chunks[1].text.starts_with("s12w ")) << chunks[1].text;
  EXPECT_TRUE(chunks[2].text.ends_with("end29.")) << chunks[2].text;
}

TEST(MarkdownChunks, HeadingsWithoutTextMakeNoChunk) {
  EXPECT_TRUE(split_markdown("# A\n\n## B\n\n").empty());
}

TEST(FtsQuery, QuotesEveryWordAndDropsSyntax) {
  EXPECT_EQ(fts_match_expression("sm_90 \"AND\" (x OR y*) NEAR: -z ^w"),
            "\"sm_90\" OR \"x\" OR \"y\" OR \"near\" OR \"z\" OR \"w\"");
  EXPECT_EQ(fts_match_expression("16-byte loads, AVX-512!"),
            "\"16-byte\" OR \"loads\" OR \"avx-512\"");
  EXPECT_EQ(fts_match_expression("()*\"^:"), "");
}

TEST(FtsQuery, StopWordsGoUnlessNothingElseIsLeft) {
  EXPECT_EQ(query_words("why is the kernel slow"), (std::vector<std::string>{"kernel", "slow"}));
  EXPECT_EQ(query_words("the the"), (std::vector<std::string>{"the"}));
}

}  // namespace
}  // namespace kernelarc
