// The knowledge base: chunked Markdown documents (kernelarc's own notes, the user's additions,
// and the skills distilled from runs) in SQLite FTS5, ranked by BM25 and keyed by op family,
// hardware, bottleneck class and error kind, so a search can be driven by a run's signals.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace kernelarc {

/// Retrieval keys. A document carries the keys it is about (from its front matter); a query's
/// keys rank documents that share them first. Values are lower-case words: families as in the
/// problem definitions ("rmsnorm", "gemm", "softmax", "elementwise", ...), hardware as "sm_90",
/// "cuda", "cpu", "avx512", bottlenecks "memory", "compute", "latency", "occupancy", "launch",
/// error kinds as the guard's statuses in lower case ("incorrect_numerical", "compile_error",
/// "timeout", "runtime_error", "reward_hack").
struct KbKeys {
  std::vector<std::string> families;
  std::vector<std::string> hardware;
  std::vector<std::string> bottlenecks;
  std::vector<std::string> error_kinds;
};

struct KbDocument {
  std::string source;  ///< unique: a file path, "builtin:<name>" or "skill:<id>"
  std::string title;
  std::string markdown;  ///< the body, split into chunks at headings
  KbKeys keys;
};

struct KbQuery {
  std::string text;  ///< free text; may be empty when keys alone select
  KbKeys keys;
  int limit = 5;
};

struct KbHit {
  std::string source;
  std::string title;
  std::string heading;  ///< the chunk's heading path ("Vector loads > Alignment")
  std::string text;     ///< the chunk
  double score = 0;     ///< higher is better (BM25 plus key matches)
};

class KnowledgeBase {
 public:
  /// Opens (creating) the knowledge base file, e.g. <workspace>/knowledge.sqlite.
  explicit KnowledgeBase(const std::filesystem::path& file);
  ~KnowledgeBase();
  KnowledgeBase(const KnowledgeBase&) = delete;
  KnowledgeBase& operator=(const KnowledgeBase&) = delete;

  /// Adds or replaces (by source) one document; a document whose content is unchanged is left
  /// as it is. Returns the number of chunks it has.
  int put(const KbDocument& document);
  /// Adds a Markdown file, or every *.md under a directory; keys and title come from the file's
  /// front matter (see docs/kb/README.md). Returns the number of documents added or replaced.
  /// InputError naming the file for a missing path or malformed front matter.
  int add_markdown(const std::filesystem::path& path);
  /// Indexes kernelarc's shipped notes (docs/kb of the source or install tree) when missing or
  /// changed; cheap when they are current.
  void ensure_builtin_notes();
  void remove(const std::string& source);

  std::vector<KbHit> search(const KbQuery& query);
  /// Every document's source and title, sorted by source.
  std::vector<std::pair<std::string, std::string>> documents();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// A workspace's knowledge base file, <workspace>/knowledge.sqlite (the skill store's too).
std::filesystem::path knowledge_file(const std::filesystem::path& workspace);

/// Opens a workspace's knowledge base, creating the workspace folder and the file when missing;
/// InputError when the workspace is a file.
KnowledgeBase open_knowledge_base(const std::filesystem::path& workspace);

}  // namespace kernelarc
