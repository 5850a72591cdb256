// What the knowledge base's source files share: the connection and the key helpers.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kb/knowledge_base.h"
#include "store/sqlite.h"

namespace kernelarc {

struct KnowledgeBase::Impl {
  explicit Impl(const std::filesystem::path& file) : db(file) {}
  sqlite::Connection db;
};

/// The keys lower-cased, each list without duplicates, in first-seen order.
KbKeys normalized_keys(const KbKeys& keys);
nlohmann::json keys_to_json(const KbKeys& keys);
KbKeys keys_from_json(const nlohmann::json& json);
/// How many of `query`'s keys the document carries (each category compared with its own).
int shared_key_count(const KbKeys& document, const KbKeys& query);

}  // namespace kernelarc
