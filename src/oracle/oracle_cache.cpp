#include "oracle/oracle_cache.h"

#include <unistd.h>

#include <fstream>
#include <sstream>

#include "core/error.h"
#include "core/atomic_file.h"
#include "core/hash.h"
#include "core/problem.h"

namespace kernelarc {

namespace {

std::optional<OrderedJson> read_json_file(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return std::nullopt;
  std::stringstream text;
  text << file.rdbuf();
  OrderedJson json = OrderedJson::parse(text.str(), nullptr, false);
  if (json.is_discarded() || !json.is_object()) {
    // A torn or foreign file is not trusted: drop it so the entry is produced again.
    std::error_code ignored;
    std::filesystem::remove(path, ignored);
    return std::nullopt;
  }
  return json;
}

}  // namespace

std::string cache_dir_name(std::string_view problem_name) {
  std::string name(problem_name);
  for (char& c : name) {
    bool safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                c == '.' || c == '_' || c == '-';
    if (!safe) c = '_';
  }
  if (name.empty() || name == "." || name == "..") name = "_" + name;
  return name;
}

uint64_t derive_seed(uint64_t base_seed, std::string_view workload_uuid, int trial) {
  std::string hex = ContentHasher()
                        .add("kernelarc-oracle-seed")
                        .add(std::to_string(base_seed))
                        .add(workload_uuid)
                        .add(std::to_string(trial))
                        .hex();
  return std::stoull(hex.substr(0, 15), nullptr, 16);
}

std::optional<std::string> read_cached_error(const std::filesystem::path& path) {
  auto json = read_json_file(path);
  if (!json) return std::nullopt;
  auto message = json->find("error");
  if (message == json->end() || !message->is_string()) {
    std::error_code ignored;
    std::filesystem::remove(path, ignored);
    return std::nullopt;
  }
  return message->get<std::string>();
}

void write_cached_error(const std::filesystem::path& path, std::string_view workload_uuid,
                        int trial, std::string_view message) {
  OrderedJson json = {{"workload", workload_uuid}, {"trial", trial}, {"error", message}};
  write_file_atomically(path, json.dump(2));
}

std::optional<CachedTiming> read_cached_timing(const std::filesystem::path& path,
                                               Baseline baseline) {
  auto json = read_json_file(path);
  if (!json) return std::nullopt;
  CachedTiming cached;
  try {
    if (json->contains("unavailable")) {
      cached.unavailable = json->at("unavailable").get<std::string>();
    } else {
      ReferenceTiming timing;
      timing.baseline = baseline;
      timing.times_ns = json->at("times_ns").get<std::vector<double>>();
      timing.note = json->value("note", "");
      if (json->contains("end_to_end_ns")) {
        timing.end_to_end_ns = json->at("end_to_end_ns").get<std::vector<double>>();
      }
      cached.timing = std::move(timing);
    }
  } catch (const nlohmann::json::exception&) {
    std::error_code ignored;
    std::filesystem::remove(path, ignored);
    return std::nullopt;
  }
  return cached;
}

void write_cached_timing(const std::filesystem::path& path, Baseline baseline,
                         const CachedTiming& timing) {
  OrderedJson json = {{"baseline", baseline_name(baseline)}};
  if (timing.timing) {
    json["times_ns"] = timing.timing->times_ns;
    json["note"] = timing.timing->note;
    if (!timing.timing->end_to_end_ns.empty()) json["end_to_end_ns"] = timing.timing->end_to_end_ns;
  } else {
    json["unavailable"] = timing.unavailable;
  }
  write_file_atomically(path, json.dump());
}

}  // namespace kernelarc
