#include "bench_rows.h"

#include <fstream>

#include <fmt/format.h>

#include "core/error.h"
#include "core/json_fields.h"

namespace kernelarc {

namespace {

OrderedJson row_to_json(const BenchRow& row, const OrderedJson& settings) {
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
          {"wall_s", row.wall_s},
          {"winner", row.winner},
          {"mean_depth", optional_number(row.mean_depth)},
          {"improving_share", optional_number(row.improving_share)}};
}

BenchRow row_from_json(const OrderedJson& json, std::string_view where) {
  auto text = [&](std::string_view key) {
    return expect_string(require_member(json, key, where, ""), where, key);
  };
  BenchRow row;
  row.problem_dir = text("problem_dir");
  row.problem = text("problem");
  row.configuration = text("configuration");
  row.seed = static_cast<int>(expect_int(require_member(json, "seed", where, ""), where, "seed"));
  row.best_ms = read_optional_number(json, "best_ms", where);
  row.ci_low_ms = read_optional_number(json, "ci_low_ms", where);
  row.ci_high_ms = read_optional_number(json, "ci_high_ms", where);
  row.speedup = read_optional_number(json, "speedup", where);
  row.speedup_low = read_optional_number(json, "speedup_low", where);
  row.speedup_high = read_optional_number(json, "speedup_high", where);
  row.wall_s = expect_number(require_member(json, "wall_s", where, ""), where, "wall_s");
  if (json.contains("winner")) row.winner = expect_string(json["winner"], where, "winner");
  // Rows written before the tree's shape was recorded lack these: unknown, as null says.
  if (json.contains("mean_depth"))
    row.mean_depth = read_optional_number(json, "mean_depth", where);
  if (json.contains("improving_share"))
    row.improving_share = read_optional_number(json, "improving_share", where);
  return row;
}

/// Ordered JSON compares objects key by key in order; settings are the same whatever the order.
bool same_settings(const OrderedJson& a, const OrderedJson& b) {
  return nlohmann::json::parse(a.dump()) == nlohmann::json::parse(b.dump());
}

}  // namespace

std::string problem_dir_name(const std::string& dir) {
  std::filesystem::path path = std::filesystem::path(dir).lexically_normal();
  if (!path.has_filename()) path = path.parent_path();
  return path.filename().string();
}

BenchRows::BenchRows(std::filesystem::path path, OrderedJson settings)
    : path_(std::move(path)), settings_(std::move(settings)) {
  std::ifstream file(path_);
  std::string line;
  for (int number = 1; std::getline(file, line); ++number) {
    if (line.empty()) continue;
    const std::string where = fmt::format("{}:{}", path_.string(), number);
    const OrderedJson json = parse_json_text(line, where);
    expect_object(json, where, "");
    if (same_settings(require_member(json, "settings", where, ""), settings_))
      rows_.push_back(row_from_json(json, where));
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
