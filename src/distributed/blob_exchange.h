// Content by hash through Redis: the orchestrator writes each blob once under its content hash
// (core/hash.h, the object store's key); a worker reads what its local object store lacks,
// checks the bytes against the hash and keeps them, so a second job over the same problem
// fetches nothing.
#pragma once

#include <string>
#include <string_view>

#include "distributed/queue_keys.h"
#include "distributed/redis_client.h"
#include "store/object_store.h"

namespace kernelarc {

class BlobExchange {
 public:
  /// `cache`: where fetched blobs are kept (a workspace's object store).
  BlobExchange(RedisClient& redis, QueueKeys keys, ObjectStore& cache);

  /// Stores the bytes on the server (unless there already) and returns their hash.
  std::string put(std::string_view bytes);
  /// The bytes of `hash`: from the local cache, else from the server (then cached). A blob the
  /// server lacks, or whose bytes do not match the hash, is an InternalError naming the key.
  std::string get(const std::string& hash);

 private:
  RedisClient* redis_;
  QueueKeys keys_;
  ObjectStore* cache_;
};

}  // namespace kernelarc
