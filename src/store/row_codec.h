// Conversions between the store's records and SQLite columns (JSON text, id lists, enums).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "store/records.h"
#include "store/sqlite.h"

namespace kernelarc {

/// The JSON text in `column`; malformed text → InputError naming the file and `field`.
nlohmann::json json_column(const sqlite::Statement& row, int column,
                           const std::filesystem::path& file, std::string_view field);
/// A JSON array of ids, e.g. inspired_by or evidence.
std::string ids_to_json(const std::vector<int64_t>& ids);
std::vector<int64_t> ids_column(const sqlite::Statement& row, int column,
                                const std::filesystem::path& file, std::string_view field);

RunStatus run_status_column(const sqlite::Statement& row, int column,
                            const std::filesystem::path& file);
BoardKind board_kind_column(const sqlite::Statement& row, int column,
                            const std::filesystem::path& file);

}  // namespace kernelarc
