#include "kb/knowledge_base.h"

#include <algorithm>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "core/error.h"
#include "core/hash.h"
#include "core/json_fields.h"
#include "core/paths.h"
#include "kb/front_matter.h"
#include "kb/knowledge_base_impl.h"
#include "kb/markdown_chunks.h"

namespace kernelarc {

namespace {

// Part of every content hash: a change to the chunker or the schema changes every hash, so the
// next put re-indexes documents that are otherwise unchanged.
constexpr const char* kIndexVersion = "kb-index-1";
constexpr const char* kBuiltinPrefix = "builtin:";

void create_schema(sqlite::Connection& db) {
  // A search may run while another process indexes notes.
  db.configure_shared();
  db.execute(
      "CREATE TABLE IF NOT EXISTS documents ("
      " id INTEGER PRIMARY KEY,"
      " source TEXT NOT NULL UNIQUE,"
      " title TEXT NOT NULL,"
      " content_hash TEXT NOT NULL,"
      " keys TEXT NOT NULL,"
      " updated_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')))");
  // porter: "loads" finds "load", "conflicts" finds "conflict". The keys column holds the
  // document's key words, so free text naming a family or bottleneck matches it too.
  db.execute(
      "CREATE VIRTUAL TABLE IF NOT EXISTS chunks USING fts5("
      " title, heading, text, keys, document_id UNINDEXED, seq UNINDEXED,"
      " tokenize = 'porter unicode61')");
}

std::string key_words(const KbKeys& keys) {
  std::vector<std::string> words;
  for (const auto* list : {&keys.families, &keys.hardware, &keys.bottlenecks, &keys.error_kinds})
    words.insert(words.end(), list->begin(), list->end());
  return fmt::format("{}", fmt::join(words, " "));
}

std::string document_hash(const KbDocument& document, const KbKeys& keys) {
  ContentHasher hasher;
  hasher.add(kIndexVersion).add(document.title).add(keys_to_json(keys).dump());
  hasher.add(document.markdown);
  return hasher.hex();
}

int chunk_count(sqlite::Connection& db, int64_t document_id) {
  auto count = db.prepare("SELECT count(*) FROM chunks WHERE document_id = ?");
  count.bind(1, document_id).step();
  return static_cast<int>(count.int64(0));
}

std::optional<std::pair<int64_t, std::string>> find_document(sqlite::Connection& db,
                                                             const std::string& source) {
  auto find = db.prepare("SELECT id, content_hash FROM documents WHERE source = ?");
  find.bind(1, source);
  if (!find.step()) return std::nullopt;
  return std::make_pair(find.int64(0), find.text(1));
}

struct PutResult {
  int chunks = 0;
  bool changed = false;
};

PutResult put_document(sqlite::Connection& db, const KbDocument& document) {
  if (document.source.empty()) throw InputError("knowledge base: a document needs a source");
  const KbKeys keys = normalized_keys(document.keys);
  const std::string hash = document_hash(document, keys);
  if (const auto existing = find_document(db, document.source);
      existing && existing->second == hash)
    return {chunk_count(db, existing->first), false};

  const std::vector<MarkdownChunk> chunks = split_markdown(document.markdown);
  sqlite::Transaction transaction(db);
  // Found again inside the transaction: another process may have written it meanwhile.
  const auto existing = find_document(db, document.source);
  int64_t id = 0;
  if (existing) {
    id = existing->first;
    db.prepare("DELETE FROM chunks WHERE document_id = ?").bind(1, id).run();
    db.prepare(
          "UPDATE documents SET title = ?, content_hash = ?, keys = ?,"
          " updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') WHERE id = ?")
        .bind(1, document.title)
        .bind(2, hash)
        .bind(3, keys_to_json(keys).dump())
        .bind(4, id)
        .run();
  } else {
    db.prepare("INSERT INTO documents (source, title, content_hash, keys) VALUES (?, ?, ?, ?)")
        .bind(1, document.source)
        .bind(2, document.title)
        .bind(3, hash)
        .bind(4, keys_to_json(keys).dump())
        .run();
    id = db.last_insert_id();
  }
  const std::string words = key_words(keys);
  for (size_t seq = 0; seq < chunks.size(); ++seq) {
    db.prepare(
          "INSERT INTO chunks (title, heading, text, keys, document_id, seq)"
          " VALUES (?, ?, ?, ?, ?, ?)")
        .bind(1, document.title)
        .bind(2, chunks[seq].heading)
        .bind(3, chunks[seq].text)
        .bind(4, words)
        .bind(5, id)
        .bind(6, static_cast<int64_t>(seq))
        .run();
  }
  transaction.commit();
  return {static_cast<int>(chunks.size()), true};
}

/// The first level-1 heading of a body, for files whose front matter names no title.
std::string first_heading(std::string_view body) {
  for (const MarkdownChunk& chunk : split_markdown(body)) {
    const auto separator = chunk.heading.find(" > ");
    if (!chunk.heading.empty()) return chunk.heading.substr(0, separator);
  }
  return {};
}

KbDocument markdown_document(const std::filesystem::path& file, std::string source) {
  const MarkdownFile parsed = parse_markdown_file(read_text_file(file), file.string());
  KbDocument document{std::move(source), parsed.title, parsed.body, parsed.keys};
  if (document.title.empty()) document.title = first_heading(parsed.body);
  if (document.title.empty()) document.title = file.stem().string();
  return document;
}

/// The *.md files of a directory (and, when `recursive`, of its subdirectories), sorted.
std::vector<std::filesystem::path> markdown_files_in(const std::filesystem::path& directory,
                                                     bool recursive) {
  std::vector<std::filesystem::path> files;
  auto take = [&](const std::filesystem::directory_entry& entry) {
    if (entry.is_regular_file() && entry.path().extension() == ".md") files.push_back(entry.path());
  };
  if (recursive)
    std::ranges::for_each(std::filesystem::recursive_directory_iterator(directory), take);
  else
    std::ranges::for_each(std::filesystem::directory_iterator(directory), take);
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

KnowledgeBase::KnowledgeBase(const std::filesystem::path& file)
    : impl_(std::make_unique<Impl>(file)) {
  create_schema(impl_->db);
}

KnowledgeBase::~KnowledgeBase() = default;

int KnowledgeBase::put(const KbDocument& document) {
  return put_document(impl_->db, document).chunks;
}

int KnowledgeBase::add_markdown(const std::filesystem::path& path) {
  std::error_code error;
  if (!std::filesystem::exists(path, error))
    throw_input_error(path.string(), "", "no such file or directory");
  const bool directory = std::filesystem::is_directory(path, error);
  const std::vector<std::filesystem::path> files =
      directory ? markdown_files_in(path, true) : std::vector<std::filesystem::path>{path};
  if (files.empty()) throw_input_error(path.string(), "", "expected .md files, found none");
  // Parsed before anything is written, so one malformed file leaves the knowledge base as it was.
  std::vector<KbDocument> documents;
  for (const auto& file : files)
    documents.push_back(markdown_document(file, std::filesystem::weakly_canonical(file).string()));
  int changed = 0;
  for (const KbDocument& document : documents) changed += put_document(impl_->db, document).changed;
  return changed;
}

void KnowledgeBase::ensure_builtin_notes() {
  const std::filesystem::path directory = data_dir() / "docs" / "kb";
  std::set<std::string> present;
  std::error_code error;
  if (std::filesystem::is_directory(directory, error)) {
    for (const auto& file : markdown_files_in(directory, false)) {
      if (file.filename() == "README.md") continue;
      const std::string source = kBuiltinPrefix + file.stem().string();
      put_document(impl_->db, markdown_document(file, source));
      present.insert(source);
    }
  }
  for (const auto& [source, title] : documents()) {
    if (source.starts_with(kBuiltinPrefix) && !present.contains(source)) remove(source);
  }
}

void KnowledgeBase::remove(const std::string& source) {
  sqlite::Transaction transaction(impl_->db);
  const auto existing = find_document(impl_->db, source);
  if (!existing) return;
  impl_->db.prepare("DELETE FROM chunks WHERE document_id = ?").bind(1, existing->first).run();
  impl_->db.prepare("DELETE FROM documents WHERE id = ?").bind(1, existing->first).run();
  transaction.commit();
}

std::vector<std::pair<std::string, std::string>> KnowledgeBase::documents() {
  std::vector<std::pair<std::string, std::string>> result;
  auto rows = impl_->db.prepare("SELECT source, title FROM documents ORDER BY source");
  while (rows.step()) result.emplace_back(rows.text(0), rows.text(1));
  return result;
}

std::filesystem::path knowledge_file(const std::filesystem::path& workspace) {
  return workspace / "knowledge.sqlite";
}

KnowledgeBase open_knowledge_base(const std::filesystem::path& workspace) {
  std::error_code error;
  if (std::filesystem::exists(workspace, error) && !std::filesystem::is_directory(workspace, error))
    throw_input_error(workspace.string(), "", "expected a workspace directory, found a file");
  std::filesystem::create_directories(workspace);
  return KnowledgeBase(knowledge_file(workspace));
}

}  // namespace kernelarc
