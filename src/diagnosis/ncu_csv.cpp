#include "diagnosis/ncu_csv.h"

#include <array>
#include <charconv>
#include <utility>

namespace kernelarc {

std::vector<std::string> split_lines(std::string_view text) {
  std::vector<std::string> lines;
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    std::string line(text.substr(0, end));
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(std::move(line));
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return lines;
}

std::optional<std::vector<std::string>> split_csv_line(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
      fields.back() += '"';
      ++i;
    } else if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      fields.emplace_back();
    } else {
      fields.back() += c;
    }
  }
  if (quoted) return std::nullopt;
  return fields;
}

std::optional<double> parse_ncu_number(std::string_view text) {
  std::string digits;
  for (char c : text) {
    if (c != ',' && c != ' ') digits += c;
  }
  if (digits.empty()) return std::nullopt;
  double value = 0;
  const char* end = digits.data() + digits.size();
  const auto [stop, error] = std::from_chars(digits.data(), end, value);
  if (error != std::errc() || stop != end) return std::nullopt;
  return value;
}

std::pair<double, std::string> ncu_base_unit(std::string_view unit) {
  struct Prefix {
    std::string_view text;
    double factor;
  };
  static constexpr std::array<Prefix, 9> byte_prefixes{{{"", 1},
                                                        {"K", 1e3},
                                                        {"M", 1e6},
                                                        {"G", 1e9},
                                                        {"T", 1e12},
                                                        {"Ki", 1024.0},
                                                        {"Mi", 1024.0 * 1024},
                                                        {"Gi", 1024.0 * 1024 * 1024},
                                                        {"Ti", 1024.0 * 1024 * 1024 * 1024}}};
  static constexpr std::array<Prefix, 4> time_prefixes{
      {{"n", 1}, {"u", 1e3}, {"m", 1e6}, {"", 1e9}}};
  for (const Prefix& prefix : byte_prefixes) {
    if (unit.size() == prefix.text.size() + 4 && unit.starts_with(prefix.text) &&
        unit.ends_with("byte")) {
      return {prefix.factor, "byte"};
    }
  }
  for (const Prefix& prefix : time_prefixes) {
    if (unit.size() == prefix.text.size() + 6 && unit.starts_with(prefix.text) &&
        unit.ends_with("second")) {
      return {prefix.factor, "nsecond"};
    }
  }
  return {1.0, std::string(unit)};
}

}  // namespace kernelarc
