#include "app/table.h"

#include <algorithm>
#include <cctype>

namespace kernelarc {

namespace {

bool looks_numeric(const std::string& cell) {
  return !cell.empty() && (std::isdigit(static_cast<unsigned char>(cell.front())) ||
                           cell.front() == '-' || cell.front() == '+');
}

}  // namespace

TextTable::TextTable(std::vector<std::string> headers) : headers_(std::move(headers)) {}

void TextTable::add_row(std::vector<std::string> cells) {
  cells.resize(headers_.size());
  rows_.push_back(std::move(cells));
}

void TextTable::print(std::ostream& out) const {
  std::vector<std::size_t> widths(headers_.size());
  for (std::size_t c = 0; c < headers_.size(); ++c) {
    widths[c] = headers_[c].size();
    for (const auto& row : rows_) widths[c] = std::max(widths[c], row[c].size());
  }
  auto print_row = [&](const std::vector<std::string>& cells, bool header) {
    for (std::size_t c = 0; c < cells.size(); ++c) {
      const std::size_t pad = widths[c] - cells[c].size();
      if (c > 0) out << "  ";
      if (!header && looks_numeric(cells[c])) {
        out << std::string(pad, ' ') << cells[c];
      } else {
        out << cells[c] << (c + 1 < cells.size() ? std::string(pad, ' ') : "");
      }
    }
    out << '\n';
  };
  print_row(headers_, true);
  std::vector<std::string> rule;
  for (auto width : widths) rule.push_back(std::string(width, '-'));
  print_row(rule, true);
  for (const auto& row : rows_) print_row(row, false);
}

}  // namespace kernelarc
