#include "bench_rows.h"

#include <fstream>

#include <fmt/format.h>

#include "core/error.h"

namespace kernelarc {

namespace {

nlohmann::json optional_number(const std::optional<double>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

std::optional<double> read_optional(const nlohmann::json& row, const char* field) {
  const auto& value = row.at(field);
  if (value.is_null()) return std::nullopt;
  return value.get<double>();
}

nlohmann::json row_to_json(const BenchRow& row, const nlohmann::json& settings) {
  return {{"settings", settings},
          {"problem_dir", row.problem_dir},
          {"problem", row.problem},
          {"configuration", row.configuration},
          {"seed", row.seed},
          {"best_ms", optional_number(row.best_ms)},
          {"ci_low_ms", optional_number(row.ci_low_ms)},
          {"ci_high_ms", optional_number(row.ci_high_ms)},
          {"speedup", optional_number(row.speedup)},
          {"speedup_low", optional_number(row.speedup_low)},
          {"speedup_high", optional_number(row.speedup_high)},
          {"wall_s", row.wall_s}};
}

BenchRow row_from_json(const nlohmann::json& json) {
  BenchRow row;
  row.problem_dir = json.at("problem_dir").get<std::string>();
  row.problem = json.at("problem").get<std::string>();
  row.configuration = json.at("configuration").get<std::string>();
  row.seed = json.at("seed").get<int>();
  row.best_ms = read_optional(json, "best_ms");
  row.ci_low_ms = read_optional(json, "ci_low_ms");
  row.ci_high_ms = read_optional(json, "ci_high_ms");
  row.speedup = read_optional(json, "speedup");
  row.speedup_low = read_optional(json, "speedup_low");
  row.speedup_high = read_optional(json, "speedup_high");
  row.wall_s = json.at("wall_s").get<double>();
  return row;
}

}  // namespace

std::string problem_dir_name(const std::string& dir) {
  std::filesystem::path path = std::filesystem::path(dir).lexically_normal();
  if (!path.has_filename()) path = path.parent_path();
  return path.filename().string();
}

BenchRows::BenchRows(std::filesystem::path path, nlohmann::json settings)
    : path_(std::move(path)), settings_(std::move(settings)) {
  std::ifstream file(path_);
  std::string line;
  for (int number = 1; std::getline(file, line); ++number) {
    if (line.empty()) continue;
    try {
      const auto json = nlohmann::json::parse(line);
      if (json.at("settings") == settings_) rows_.push_back(row_from_json(json));
    } catch (const nlohmann::json::exception& error) {
      throw InputError(fmt::format("{}: line {}: expected a row of optimize_bench ({})",
                                   path_.string(), number, error.what()));
    }
  }
}

const BenchRow* BenchRows::find(const std::string& problem_dir, const std::string& configuration,
                                int seed) const {
  for (const BenchRow& row : rows_)
    if (row.problem_dir == problem_dir && row.configuration == configuration && row.seed == seed)
      return &row;
  return nullptr;
}

void BenchRows::add(const BenchRow& row) {
  std::error_code ignored;
  std::filesystem::create_directories(path_.parent_path(), ignored);
  std::ofstream file(path_, std::ios::app);
  file << row_to_json(row, settings_).dump() << '\n' << std::flush;
  if (!file) throw InputError(fmt::format("{}: cannot append a row", path_.string()));
  rows_.push_back(row);
}

}  // namespace kernelarc
