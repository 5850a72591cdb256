// The database schema and its version.
#pragma once

#include "store/sqlite.h"

namespace kernelarc {

/// The schema version this build writes and reads.
inline constexpr int64_t kStoreSchemaVersion = 4;

/// Creates the tables in an empty database, or checks the version of an existing one: a newer
/// version (written by a later kernelarc) is refused with an InputError naming the file.
void ensure_store_schema(sqlite::Connection& connection);

}  // namespace kernelarc
