#include <algorithm>
#include <cctype>

#include "kb/knowledge_base_impl.h"

namespace kernelarc {

namespace {

std::vector<std::string> normalized_list(const std::vector<std::string>& values) {
  std::vector<std::string> result;
  for (const std::string& value : values) {
    std::string word = value;
    for (char& c : word) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (!word.empty() && std::find(result.begin(), result.end(), word) == result.end())
      result.push_back(word);
  }
  return result;
}

int shared_count(const std::vector<std::string>& document, const std::vector<std::string>& query) {
  return static_cast<int>(std::count_if(query.begin(), query.end(), [&](const std::string& key) {
    return std::find(document.begin(), document.end(), key) != document.end();
  }));
}

}  // namespace

KbKeys normalized_keys(const KbKeys& keys) {
  return {normalized_list(keys.families), normalized_list(keys.hardware),
          normalized_list(keys.bottlenecks), normalized_list(keys.error_kinds)};
}

nlohmann::json keys_to_json(const KbKeys& keys) {
  return {{"families", keys.families},
          {"hardware", keys.hardware},
          {"bottlenecks", keys.bottlenecks},
          {"error_kinds", keys.error_kinds}};
}

KbKeys keys_from_json(const nlohmann::json& json) {
  auto list = [&](const char* name) { return json.value(name, std::vector<std::string>{}); };
  return {list("families"), list("hardware"), list("bottlenecks"), list("error_kinds")};
}

int shared_key_count(const KbKeys& document, const KbKeys& query) {
  const KbKeys wanted = normalized_keys(query);
  return shared_count(document.families, wanted.families) +
         shared_count(document.hardware, wanted.hardware) +
         shared_count(document.bottlenecks, wanted.bottlenecks) +
         shared_count(document.error_kinds, wanted.error_kinds);
}

}  // namespace kernelarc
