// Ranking: BM25 over the chunks (FTS5), plus a fixed boost per query key the chunk's document
// carries; at most kChunksPerDocument chunks of one document per answer.
#include <algorithm>
#include <map>

#include "kb/fts_query.h"
#include "kb/knowledge_base.h"
#include "kb/knowledge_base_impl.h"

namespace kernelarc {

namespace {

// Column weights for bm25(): title, heading, text, keys. A word in a title or heading says
// more about a chunk than the same word in its running text.
constexpr const char* kRankExpression = "-bm25(chunks, 5.0, 3.0, 1.0, 2.0)";
// Per shared key. BM25 scores of the shipped notes for a few-word query lie between about 1
// and 15, so a key is worth about a strong text match: a document about the query's family or
// bottleneck outranks one that only shares words with the text.
constexpr double kKeyBoost = 8.0;
constexpr int kChunksPerDocument = 2;
// Text matches fetched before the key boost re-ranks them; far more than any answer needs.
constexpr int kCandidateChunks = 400;
// A chunk that matches only words found in nearly every chunk ("cuda", "threads") scores about
// 0, as FTS5 floors such a word's IDF at 1e-6. Below this fraction of the best chunk's BM25 a
// chunk is noise and left out, unless its document shares a key with the query. A fraction,
// not a fixed floor: in a knowledge base of a few documents every word is common.
constexpr double kNoiseFraction = 0.01;

struct DocumentInfo {
  std::string source;
  std::string title;
  int shared_keys = 0;
};

std::map<int64_t, DocumentInfo> load_documents(sqlite::Connection& db, const KbKeys& query_keys) {
  std::map<int64_t, DocumentInfo> documents;
  auto rows = db.prepare("SELECT id, source, title, keys FROM documents");
  while (rows.step()) {
    const KbKeys keys = keys_from_json(nlohmann::json::parse(rows.text(3)));
    documents[rows.int64(0)] = {rows.text(1), rows.text(2), shared_key_count(keys, query_keys)};
  }
  return documents;
}

struct Candidate {
  int64_t document_id = 0;
  KbHit hit;
};

std::vector<Candidate> text_candidates(sqlite::Connection& db, const std::string& expression,
                                       const std::map<int64_t, DocumentInfo>& documents) {
  struct Match {
    int64_t document_id;
    std::string heading;
    std::string text;
    double bm25;
  };
  std::vector<Match> matches;
  auto rows = db.prepare(std::string("SELECT document_id, heading, text, ") + kRankExpression +
                         " AS score FROM chunks WHERE chunks MATCH ? ORDER BY score DESC LIMIT ?");
  rows.bind(1, expression).bind(2, static_cast<int64_t>(kCandidateChunks));
  while (rows.step()) matches.push_back({rows.int64(0), rows.text(1), rows.text(2), rows.real(3)});
  if (matches.empty()) return {};

  const double noise = kNoiseFraction * matches.front().bm25;
  std::vector<Candidate> candidates;
  for (Match& match : matches) {
    const auto document = documents.find(match.document_id);
    if (document == documents.end()) continue;
    const int shared_keys = document->second.shared_keys;
    if (shared_keys == 0 && match.bm25 < noise) continue;
    candidates.push_back(
        {match.document_id,
         {document->second.source, document->second.title, std::move(match.heading),
          std::move(match.text), match.bm25 + kKeyBoost * shared_keys}});
  }
  return candidates;
}

/// With no text, the documents sharing a key, each represented by its first chunks.
std::vector<Candidate> key_candidates(sqlite::Connection& db,
                                      const std::map<int64_t, DocumentInfo>& documents) {
  std::vector<Candidate> candidates;
  for (const auto& [id, document] : documents) {
    if (document.shared_keys == 0) continue;
    auto rows =
        db.prepare("SELECT heading, text FROM chunks WHERE document_id = ? ORDER BY seq LIMIT ?");
    rows.bind(1, id).bind(2, static_cast<int64_t>(kChunksPerDocument));
    while (rows.step()) {
      candidates.push_back({id,
                            {document.source, document.title, rows.text(0), rows.text(1),
                             kKeyBoost * document.shared_keys}});
    }
  }
  return candidates;
}

std::vector<KbHit> best_hits(std::vector<Candidate> candidates, int limit) {
  // Stable: equal scores keep the order FTS5 or the source order gave them.
  std::stable_sort(
      candidates.begin(), candidates.end(),
      [](const Candidate& a, const Candidate& b) { return a.hit.score > b.hit.score; });
  std::vector<KbHit> hits;
  std::map<int64_t, int> per_document;
  for (Candidate& candidate : candidates) {
    if (static_cast<int>(hits.size()) == limit) break;
    if (++per_document[candidate.document_id] > kChunksPerDocument) continue;
    hits.push_back(std::move(candidate.hit));
  }
  return hits;
}

}  // namespace

std::vector<KbHit> KnowledgeBase::search(const KbQuery& query) {
  if (query.limit <= 0) return {};
  const std::map<int64_t, DocumentInfo> documents = load_documents(impl_->db, query.keys);
  const std::string expression = fts_match_expression(query.text);
  if (!expression.empty())
    return best_hits(text_candidates(impl_->db, expression, documents), query.limit);
  return best_hits(key_candidates(impl_->db, documents), query.limit);
}

}  // namespace kernelarc
