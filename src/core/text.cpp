#include "core/text.h"

#include <algorithm>
#include <cctype>
#include <fstream>

#include <fmt/format.h>

namespace kernelarc {

std::string_view trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())))
    text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
    text.remove_suffix(1);
  return text;
}

std::string to_lower(std::string_view text) {
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return lower;
}

std::string read_first_line(const std::filesystem::path& path) {
  std::ifstream file(path);
  std::string line;
  std::getline(file, line);
  return line;
}

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const std::size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : 0.5 * (values[mid - 1] + values[mid]);
}

std::string byte_size_text(double bytes) {
  if (bytes >= 1e9) return fmt::format("{:.3g} GB", bytes * 1e-9);
  if (bytes >= 1e6) return fmt::format("{:.3g} MB", bytes * 1e-6);
  if (bytes >= 1e3) return fmt::format("{:.3g} kB", bytes * 1e-3);
  return fmt::format("{:.0f} bytes", bytes);
}

}  // namespace kernelarc
