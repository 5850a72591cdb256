#include "app/line_diff.h"

#include <cstdint>
#include <sstream>

namespace kernelarc {

namespace {

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream stream(text);
  for (std::string line; std::getline(stream, line);) lines.push_back(line);
  return lines;
}

}  // namespace

std::optional<std::vector<DiffLine>> diff_lines(const std::string& before, const std::string& after,
                                                std::size_t max_lines) {
  const std::vector<std::string> a = split_lines(before);
  const std::vector<std::string> b = split_lines(after);
  if (a.size() + b.size() > max_lines) return std::nullopt;
  // common[i][j]: the longest common subsequence of a[i..] and b[j..].
  const std::size_t width = b.size() + 1;
  std::vector<uint32_t> common((a.size() + 1) * width, 0);
  for (std::size_t i = a.size(); i-- > 0;)
    for (std::size_t j = b.size(); j-- > 0;)
      common[i * width + j] =
          a[i] == b[j] ? common[(i + 1) * width + j + 1] + 1
                       : std::max(common[(i + 1) * width + j], common[i * width + j + 1]);
  std::vector<DiffLine> lines;
  std::size_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    if (i < a.size() && j < b.size() && a[i] == b[j]) {
      lines.push_back({' ', a[i++]});
      ++j;
    } else if (i < a.size() &&
               (j == b.size() || common[(i + 1) * width + j] >= common[i * width + j + 1])) {
      // Removed lines before added ones, as diff -u prints a change.
      lines.push_back({'-', a[i++]});
    } else {
      lines.push_back({'+', b[j++]});
    }
  }
  return lines;
}

}  // namespace kernelarc
