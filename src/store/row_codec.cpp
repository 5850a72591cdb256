#include "store/row_codec.h"

#include <fmt/format.h>

#include "core/error.h"

namespace kernelarc {

nlohmann::json json_column(const sqlite::Statement& row, int column,
                           const std::filesystem::path& file, std::string_view field) {
  try {
    return nlohmann::json::parse(row.text(column));
  } catch (const nlohmann::json::parse_error& error) {
    throw_input_error(file.string(), field, fmt::format("expected JSON: {}", error.what()));
  }
}

std::string ids_to_json(const std::vector<int64_t>& ids) {
  return nlohmann::json(ids).dump();
}

std::vector<int64_t> ids_column(const sqlite::Statement& row, int column,
                                const std::filesystem::path& file, std::string_view field) {
  const nlohmann::json ids = json_column(row, column, file, field);
  std::vector<int64_t> result;
  if (!ids.is_array()) throw_input_error(file.string(), field, "expected an array of ids");
  for (const nlohmann::json& id : ids) {
    if (!id.is_number_integer()) {
      throw_input_error(file.string(), field, "expected an array of ids");
    }
    result.push_back(id.get<int64_t>());
  }
  return result;
}

RunStatus run_status_column(const sqlite::Statement& row, int column,
                            const std::filesystem::path& file) {
  const std::string name = row.text(column);
  for (RunStatus status :
       {RunStatus::Running, RunStatus::Finished, RunStatus::Failed, RunStatus::Stopped}) {
    if (run_status_name(status) == name) return status;
  }
  throw_input_error(file.string(), "runs.status",
                    fmt::format("expected running, finished, failed or stopped, got \"{}\"", name));
}

BoardKind board_kind_column(const sqlite::Statement& row, int column,
                            const std::filesystem::path& file) {
  const std::string name = row.text(column);
  for (BoardKind kind : {BoardKind::Conclusion, BoardKind::Redirect}) {
    if (board_kind_name(kind) == name) return kind;
  }
  throw_input_error(file.string(), "board.kind",
                    fmt::format("expected conclusion or redirect, got \"{}\"", name));
}

}  // namespace kernelarc
