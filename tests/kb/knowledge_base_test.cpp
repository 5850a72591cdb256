#include "kb/knowledge_base.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "core/test_support.h"

namespace kernelarc {
namespace {

using testing::TempDir;

std::string first_source(const std::vector<KbHit>& hits) {
  return hits.empty() ? "(no hits)" : hits.front().source;
}

std::vector<std::string> sources_of(const std::vector<KbHit>& hits) {
  std::vector<std::string> sources;
  for (const KbHit& hit : hits) sources.push_back(hit.source);
  return sources;
}

/// One knowledge base over the shipped notes for every retrieval test.
class ShippedNotes : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    kb_ = new KnowledgeBase(*dir_ / "knowledge.sqlite");
    kb_->ensure_builtin_notes();
  }
  static void TearDownTestSuite() {
    delete kb_;
    delete dir_;
  }
  static TempDir* dir_;
  static KnowledgeBase* kb_;
};

TempDir* ShippedNotes::dir_ = nullptr;
KnowledgeBase* ShippedNotes::kb_ = nullptr;

TEST_F(ShippedNotes, IndexesEveryNoteButTheReadme) {
  const auto documents = kb_->documents();
  std::set<std::string> sources;
  for (const auto& [source, title] : documents) sources.insert(source);
  for (const char* name :
       {"builtin:hopper-memory-hierarchy", "builtin:vector-loads", "builtin:shared-memory-banks",
        "builtin:tensor-cores", "builtin:occupancy-and-registers", "builtin:reductions",
        "builtin:cpu-simd-and-caches", "builtin:launch-overhead"})
    EXPECT_TRUE(sources.contains(name)) << name;
  EXPECT_FALSE(sources.contains("builtin:README"));
}

struct Expectation {
  KbQuery query;
  std::string first;
};

TEST_F(ShippedNotes, QueriesFindTheNoteAboutThem) {
  const std::vector<Expectation> expectations = {
      {{"bank conflicts"}, "builtin:shared-memory-banks"},
      {{"16-byte loads alignment"}, "builtin:vector-loads"},
      {{"small batch", {{}, {}, {"launch"}, {}}}, "builtin:launch-overhead"},
      {{"wgmma TMA"}, "builtin:tensor-cores"},
      {{"AVX-512 OpenMP threads"}, "builtin:cpu-simd-and-caches"},
      {{"coalescing sectors HBM"}, "builtin:hopper-memory-hierarchy"},
      {{"register spills launch bounds"}, "builtin:occupancy-and-registers"},
      {{"warp shuffle online softmax"}, "builtin:reductions"},
      {{"CUDA graphs torch.compile"}, "builtin:launch-overhead"},
      {{"ldmatrix cp.async pipeline"}, "builtin:tensor-cores"},
      {{"padding swizzle"}, "builtin:shared-memory-banks"},
      {{"misaligned address"}, "builtin:vector-loads"},
      {{"Welford variance"}, "builtin:reductions"},
      {{"cache blocking micro-kernel"}, "builtin:cpu-simd-and-caches"},
  };
  for (const Expectation& expectation : expectations) {
    const auto hits = kb_->search(expectation.query);
    ASSERT_FALSE(hits.empty()) << expectation.query.text;
    EXPECT_EQ(hits.front().source, expectation.first)
        << "query \"" << expectation.query.text << "\" ranked "
        << ::testing::PrintToString(sources_of(hits));
  }
}

TEST_F(ShippedNotes, HitsCarryHeadingTextAndFallingScores) {
  const auto hits = kb_->search({"bank conflicts padding", {}, 5});
  ASSERT_GE(hits.size(), 2u);
  EXPECT_EQ(hits.front().title, "Shared memory and bank conflicts");
  EXPECT_TRUE(hits.front().heading.starts_with("Shared memory and bank conflicts"))
      << hits.front().heading;
  EXPECT_FALSE(hits.front().text.empty());
  for (size_t i = 1; i < hits.size(); ++i) EXPECT_GE(hits[i - 1].score, hits[i].score);
}

TEST_F(ShippedNotes, KeysRankTheirDocumentsFirst) {
  // By text alone the occupancy note wins; the avx512 key moves the CPU note ahead of it.
  EXPECT_EQ(first_source(kb_->search({"threads occupancy"})), "builtin:occupancy-and-registers");
  const auto hits = kb_->search({"threads occupancy", {{}, {"avx512"}, {}, {}}});
  ASSERT_FALSE(hits.empty());
  EXPECT_EQ(hits.front().source, "builtin:cpu-simd-and-caches");
}

TEST_F(ShippedNotes, ChunksMatchingOnlyUbiquitousWordsAreLeftOut) {
  // "cuda" is a key word of most notes; "graphs" makes the launch note's chunks the real hits.
  const auto hits = kb_->search({"CUDA graphs", {}, 10});
  ASSERT_FALSE(hits.empty());
  for (const KbHit& hit : hits) EXPECT_GT(hit.score, 0.01 * hits.front().score) << hit.heading;
}

TEST_F(ShippedNotes, KeysAloneSelectDocumentsByTheNumberOfSharedKeys) {
  const auto hits = kb_->search({"", {{"gemm"}, {"avx512"}, {}, {}}, 20});
  ASSERT_FALSE(hits.empty());
  EXPECT_EQ(hits.front().source, "builtin:cpu-simd-and-caches");  // the only one with both
  const std::vector<std::string> ranked = sources_of(hits);
  const std::set<std::string> sources(ranked.begin(), ranked.end());
  EXPECT_TRUE(sources.contains("builtin:tensor-cores"));
  EXPECT_FALSE(sources.contains("builtin:reductions"));  // neither key
  for (size_t i = 1; i < hits.size(); ++i) EXPECT_GE(hits[i - 1].score, hits[i].score);
}

TEST_F(ShippedNotes, NoTextAndNoKeysFindsNothing) {
  EXPECT_TRUE(kb_->search({}).empty());
  EXPECT_TRUE(kb_->search({"bank conflicts", {}, 0}).empty());
}

TEST_F(ShippedNotes, AtMostTwoChunksOfOneDocumentAndTheLimitHolds) {
  for (const char* text : {"shared memory", "tensor cores wgmma mma.sync", "registers"}) {
    const auto hits = kb_->search({text, {}, 6});
    EXPECT_LE(hits.size(), 6u);
    std::map<std::string, int> per_document;
    for (const KbHit& hit : hits) EXPECT_LE(++per_document[hit.source], 2) << text;
  }
}

TEST_F(ShippedNotes, SearchSyntaxInTheTextIsOnlyWords) {
  for (const char* text :
       {"sm_90", "\"unbalanced quote", "AND", "OR NOT", "(bank conflicts", "*", "wgmma*",
        "NEAR(a b)", "col:value", "^start", "a - b + c", "'single' \"double\"", "))(("}) {
    EXPECT_NO_THROW(kb_->search({text})) << text;
  }
  const auto hits = kb_->search({"sm_90 (shared memory) AND banks*"});
  ASSERT_FALSE(hits.empty());
  EXPECT_EQ(hits.front().source, "builtin:shared-memory-banks");
}

TEST_F(ShippedNotes, EnsuringAgainChangesNothing) {
  const auto before = kb_->search({"bank conflicts", {}, 10});
  kb_->ensure_builtin_notes();
  const auto after = kb_->search({"bank conflicts", {}, 10});
  EXPECT_EQ(sources_of(before), sources_of(after));
  ASSERT_EQ(before.size(), after.size());
  for (size_t i = 0; i < before.size(); ++i) EXPECT_EQ(before[i].text, after[i].text);
}

KbDocument sample_document(const std::string& source, const std::string& body) {
  return {source, "Sample", body, {{"rmsnorm"}, {"sm_90"}, {"memory"}, {}}};
}

TEST(KnowledgeBase, PutOfUnchangedContentIsANoOp) {
  TempDir dir;
  KnowledgeBase kb(dir / "kb.sqlite");
  const KbDocument document =
      sample_document("mine", "# Zebra stripes\nzebra text\n## More\nzebra again\n");
  EXPECT_EQ(kb.put(document), 2);
  EXPECT_EQ(kb.put(document), 2);
  const auto hits = kb.search({"zebra", {}, 10});
  EXPECT_EQ(hits.size(), 2u);
  EXPECT_EQ(kb.documents().size(), 1u);
}

TEST(KnowledgeBase, PutReplacesByTheSourceAndRemoveDeletes) {
  TempDir dir;
  KnowledgeBase kb(dir / "kb.sqlite");
  kb.put(sample_document("mine", "# Zebra\nzebra text\n"));
  EXPECT_EQ(kb.put(sample_document("mine", "# Giraffe\ngiraffe text\n")), 1);
  EXPECT_TRUE(kb.search({"zebra"}).empty());
  const auto hits = kb.search({"giraffe"});
  ASSERT_EQ(hits.size(), 1u);
  EXPECT_EQ(hits[0].source, "mine");
  EXPECT_EQ(hits[0].heading, "Giraffe");
  EXPECT_EQ(hits[0].text, "giraffe text");

  kb.remove("mine");
  kb.remove("never there");
  EXPECT_TRUE(kb.search({"giraffe"}).empty());
  EXPECT_TRUE(kb.documents().empty());
}

TEST(KnowledgeBase, KeysChangeTheContentHash) {
  TempDir dir;
  KnowledgeBase kb(dir / "kb.sqlite");
  KbDocument document = sample_document("mine", "# Zebra\nzebra text\n");
  kb.put(document);
  EXPECT_TRUE(kb.search({"", {{}, {}, {"launch"}, {}}}).empty());
  document.keys.bottlenecks = {"Launch"};  // keys are lower-cased
  kb.put(document);
  EXPECT_EQ(kb.search({"", {{}, {}, {"launch"}, {}}}).size(), 1u);
}

TEST(KnowledgeBase, KeysOutrankText) {
  TempDir dir;
  KnowledgeBase kb(dir / "kb.sqlite");
  kb.put({"wordy", "Wordy", "# Tiles\ntiles tiles tiles tiles\n", {}});
  kb.put({"keyed", "Keyed", "# Notes\nsomething about tiles\n", {{"gemm"}, {}, {}, {}}});
  EXPECT_EQ(first_source(kb.search({"tiles"})), "wordy");
  EXPECT_EQ(first_source(kb.search({"tiles", {{"gemm"}, {}, {}, {}}})), "keyed");
}

TEST(KnowledgeBase, AddsMarkdownFilesWithFrontMatter) {
  TempDir dir;
  dir.write("notes/tiling.md",
            "---\ntitle: \"Tiling notes\"\nfamilies: [GEMM, gemm]\nhardware: []\n---\n"
            "# Tiles\nsplit the output into tiles\n");
  dir.write("notes/sub/plain.md", "# Plain title\nno front matter here\n");
  KnowledgeBase kb(dir / "kb.sqlite");
  EXPECT_EQ(kb.add_markdown(dir / "notes"), 2);
  EXPECT_EQ(kb.add_markdown(dir / "notes"), 0);  // unchanged
  const auto documents = kb.documents();
  ASSERT_EQ(documents.size(), 2u);
  std::set<std::string> titles;
  for (const auto& [source, title] : documents) {
    EXPECT_TRUE(std::filesystem::path(source).is_absolute()) << source;
    titles.insert(title);
  }
  EXPECT_EQ(titles, (std::set<std::string>{"Tiling notes", "Plain title"}));
  const auto hits = kb.search({"", {{"gemm"}, {}, {}, {}}});
  ASSERT_EQ(hits.size(), 1u);
  EXPECT_EQ(hits[0].title, "Tiling notes");
}

TEST(KnowledgeBase, MalformedFrontMatterNamesTheFileAndLine) {
  TempDir dir;
  KnowledgeBase kb(dir / "kb.sqlite");
  const auto bad_list = dir.write("bad_list.md", "---\ntitle: x\nfamilies: gemm\n---\nbody\n");
  std::string message = testing::input_error_of([&] { kb.add_markdown(bad_list); });
  EXPECT_NE(message.find(bad_list.string() + ":3"), std::string::npos) << message;
  EXPECT_NE(message.find("families"), std::string::npos) << message;

  const auto unknown = dir.write("unknown.md", "---\ntitle: x\n\nauthor: me\n---\n");
  message = testing::input_error_of([&] { kb.add_markdown(unknown); });
  EXPECT_NE(message.find(unknown.string() + ":4"), std::string::npos) << message;

  const auto unclosed = dir.write("unclosed.md", "---\ntitle: x\n# Body\n");
  message = testing::input_error_of([&] { kb.add_markdown(unclosed); });
  EXPECT_NE(message.find(unclosed.string() + ":1"), std::string::npos) << message;

  const auto bad_item = dir.write("bad_item.md", "---\nhardware: [sm_90, ]\n---\n");
  message = testing::input_error_of([&] { kb.add_markdown(bad_item); });
  EXPECT_NE(message.find(bad_item.string() + ":2"), std::string::npos) << message;

  EXPECT_TRUE(kb.documents().empty());
}

TEST(KnowledgeBase, AFolderWithOneBadFileAddsNothing) {
  TempDir dir;
  dir.write("notes/a_good.md", "# Good\ntext\n");
  dir.write("notes/b_bad.md", "---\nnope\n---\n");
  KnowledgeBase kb(dir / "kb.sqlite");
  testing::input_error_of([&] { kb.add_markdown(dir / "notes"); });
  EXPECT_TRUE(kb.documents().empty());
}

TEST(KnowledgeBase, AMissingPathIsAnInputError) {
  TempDir dir;
  KnowledgeBase kb(dir / "kb.sqlite");
  const std::string message = testing::input_error_of([&] { kb.add_markdown(dir / "absent.md"); });
  EXPECT_NE(message.find("absent.md"), std::string::npos) << message;
}

TEST(KnowledgeBase, BuiltinNotesWhoseFileIsGoneAreRemoved) {
  TempDir dir;
  KnowledgeBase kb(dir / "kb.sqlite");
  kb.put(sample_document("builtin:retired-note", "# Old\nstale advice\n"));
  kb.put(sample_document("user-note", "# Mine\nstale advice too\n"));
  kb.ensure_builtin_notes();
  std::set<std::string> sources;
  for (const auto& [source, title] : kb.documents()) sources.insert(source);
  EXPECT_FALSE(sources.contains("builtin:retired-note"));
  EXPECT_TRUE(sources.contains("user-note"));
  EXPECT_TRUE(sources.contains("builtin:vector-loads"));
}

TEST(KnowledgeBase, ReopeningKeepsTheDocuments) {
  TempDir dir;
  { KnowledgeBase(dir / "kb.sqlite").put(sample_document("mine", "# Zebra\nzebra\n")); }
  KnowledgeBase kb(dir / "kb.sqlite");
  EXPECT_EQ(kb.search({"zebra"}).size(), 1u);
}

}  // namespace
}  // namespace kernelarc
