#include "coverage_rows.h"

#include <algorithm>
#include <map>
#include <regex>

#include <fmt/format.h>

namespace kernelarc {

namespace {

// Long reasons (a traceback, a list of templates) are cut in the table; the JSON has them whole.
constexpr std::size_t kReasonWidth = 110;

std::string first_line(const std::string& text, std::size_t width) {
  std::string line = text.substr(0, text.find('\n'));
  if (line.size() > width) line = line.substr(0, width - 3) + "...";
  return line;
}

/// What problems not served are counted by: the op the lowering stopped at ("aten.convolution
/// .default"), else the reason's first line without its op number and family-match postscript.
std::string reason_key(const std::string& reason) {
  std::string key = reason.substr(0, reason.find('\n'));
  key = key.substr(0, key.find(" (and no hand-written family matches"));
  key = std::regex_replace(key, std::regex(R"( \(op \d+\))"), "");
  if (key.rfind("aten.", 0) == 0) key = key.substr(0, key.find(':'));
  return first_line(key, kReasonWidth);
}

std::string recognized_as(const CoverageRow& row) {
  if (!row.read) return "-";
  if (row.recognized == "not served") return "not served";
  if (row.family.empty() || row.family == row.recognized) return row.recognized;
  return fmt::format("{} ({})", row.family, row.recognized);
}

struct Totals {
  int rows = 0, read = 0, served = 0, bound = 0;
  std::map<std::string, int> by_recognition;
  /// Why problems are not served (reason_key), most common first.
  std::vector<std::pair<std::string, int>> not_served_reasons;
};

Totals totals_of(const std::vector<CoverageRow>& rows) {
  Totals totals;
  std::map<std::string, int> reasons;
  for (const CoverageRow& row : rows) {
    ++totals.rows;
    if (!row.read) continue;
    ++totals.read;
    ++totals.by_recognition[row.recognized];
    if (row.recognized != "not served")
      ++totals.served;
    else
      ++reasons[reason_key(row.summary)];
    if (!row.binding.empty()) ++totals.bound;
  }
  totals.not_served_reasons.assign(reasons.begin(), reasons.end());
  std::stable_sort(totals.not_served_reasons.begin(), totals.not_served_reasons.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  return totals;
}

}  // namespace

void print_coverage(const std::vector<CoverageRow>& rows, const std::string& target,
                    std::ostream& out) {
  const std::vector<std::string> header = {"problem", "read", "recognized as",
                                           "templates (" + target + ")", "why not"};
  std::vector<std::vector<std::string>> cells;
  for (const CoverageRow& row : rows) {
    const std::string why =
        row.why_not.empty() ? "" : first_line(row.why_not.front(), kReasonWidth);
    cells.push_back({row.problem, row.read ? "yes" : "no", recognized_as(row),
                     row.binding.empty() ? "-" : fmt::format("{}", fmt::join(row.binding, ",")),
                     why});
  }
  std::vector<std::size_t> widths;
  for (const std::string& title : header) widths.push_back(title.size());
  for (const auto& line : cells)
    for (std::size_t i = 0; i < line.size(); ++i) widths[i] = std::max(widths[i], line[i].size());
  const auto print_line = [&](const std::vector<std::string>& line) {
    std::string text;
    for (std::size_t i = 0; i < line.size(); ++i) {
      text += i + 1 == line.size() ? line[i] : fmt::format("{:<{}}  ", line[i], widths[i]);
    }
    out << text.substr(0, text.find_last_not_of(' ') + 1) << '\n';
  };
  print_line(header);
  std::vector<std::string> rule;
  for (std::size_t width : widths) rule.push_back(std::string(width, '-'));
  print_line(rule);
  for (const auto& line : cells) print_line(line);

  const Totals totals = totals_of(rows);
  out << fmt::format("\n{} problems: {} read, {} recognized, {} with a {} template that binds\n",
                     totals.rows, totals.read, totals.served, totals.bound, target);
  for (const auto& [source, count] : totals.by_recognition)
    out << fmt::format("  {}: {}\n", source, count);
  if (!totals.not_served_reasons.empty()) out << "not served, by reason:\n";
  for (const auto& [reason, count] : totals.not_served_reasons)
    out << fmt::format("  {:>4}  {}\n", count, reason);
}

OrderedJson coverage_json(const std::vector<CoverageRow>& rows, const std::string& target) {
  OrderedJson entries = OrderedJson::array();
  for (const CoverageRow& row : rows) {
    entries.push_back({{"problem", row.problem},
                       {"source", row.source},
                       {"read", row.read},
                       {"recognized", row.read ? OrderedJson(row.recognized) : OrderedJson()},
                       {"family", row.family},
                       {"summary", row.summary},
                       {"binding", row.binding},
                       {"why_not", row.why_not}});
  }
  const Totals totals = totals_of(rows);
  OrderedJson by_reason = OrderedJson::object();
  for (const auto& [reason, count] : totals.not_served_reasons) by_reason[reason] = count;
  return {{"target", target},
          {"rows", entries},
          {"totals",
           {{"problems", totals.rows},
            {"read", totals.read},
            {"recognized", totals.served},
            {"bound", totals.bound},
            {"by_recognition", totals.by_recognition},
            {"not_served_by_reason", by_reason}}}};
}

}  // namespace kernelarc
