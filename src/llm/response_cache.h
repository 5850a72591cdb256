// The response cache that makes a run replayable and lets tests run offline: one JSON file per
// request, <dir>/<key>.json, named by a content hash of everything that decides the answer
// (provider, endpoint, model, temperature, max_tokens and the request body, or the request's
// cache_identity when it has one), never by the API key, which is in neither the key nor the
// file.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "llm/chat.h"

namespace kernelarc {

class ResponseCache {
 public:
  /// The directory is created by the first store().
  explicit ResponseCache(std::filesystem::path dir);

  /// The content hash (core/hash.h) naming the entry for this request.
  static std::string key(const ModelConfig& model, const std::string& request_body,
                         uint64_t sample = 0);

  /// A stored result (response, request and response bodies, with from_cache set and attempts
  /// 0) and the identity it was stored under (the request body when none was given).
  struct Entry {
    ChatResult result;
    std::string identity;
  };
  /// The entry stored under `key`; nullopt when there is none or its file cannot be read.
  std::optional<Entry> find(const std::string& key) const;
  /// Stores a result that holds a response (a failure is not stored), written to a temporary
  /// file and renamed so that a reader never sees half an entry. InternalError on an I/O error.
  void store(const std::string& key, const ModelConfig& model, const ChatResult& result,
             const std::string& identity = "") const;

  std::filesystem::path path_of(const std::string& key) const;
  const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path dir_;
};

enum class CacheMode {
  Record,  ///< answer from the cache when it can, else ask the model and keep its answer
  Replay,  ///< answer from the cache only: a miss fails and nothing is sent
};

/// A ChatClient in front of another that reads and fills a ResponseCache.
class CachingChatClient : public ChatClient {
 public:
  /// `inner` may be null in Replay mode only (InternalError otherwise).
  CachingChatClient(std::unique_ptr<ChatClient> inner, std::filesystem::path dir, CacheMode mode);

  /// A hit returns the stored result (from_cache, attempts 0). A miss asks the inner client in
  /// Record mode and stores a success; in Replay mode it fails with "not in the replay cache".
  ChatResult complete(const ModelConfig& model, const ChatRequest& request) override;

 private:
  std::unique_ptr<ChatClient> inner_;
  ResponseCache cache_;
  CacheMode mode_;
};

}  // namespace kernelarc
