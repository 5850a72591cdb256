// The sections of `kernelarc report`'s page, each the HTML under its <h2>, for render_report_html
// to put together: the search (progress, tree, roofline) in report_search_sections.cpp, the
// results (facts, workloads, problems, lists, winner, summary) in report_result_sections.cpp.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "app/report_page_model.h"
#include "app/svg_chart.h"

namespace kernelarc::report_page {

/// Agents keep one colour on every chart, given in order of first appearance.
class AgentColors {
 public:
  explicit AgentColors(const std::vector<Candidate>& candidates) {
    for (const Candidate& c : candidates)
      if (!colors_.count(c.agent)) {
        colors_[c.agent] = svg::palette_color(order_.size());
        order_.push_back(c.agent);
      }
  }
  const std::string& operator()(const std::string& agent) const { return colors_.at(agent); }
  std::vector<svg::LegendEntry> legend() const {
    std::vector<svg::LegendEntry> entries;
    for (const std::string& agent : order_) entries.push_back({agent, colors_.at(agent)});
    return entries;
  }

 private:
  std::vector<std::string> order_;
  std::map<std::string, std::string> colors_;
};

// One width for the full-width charts, so that they line up down the page.
inline constexpr double kWidth = 960;

std::string progress_section(const Model& m, const AgentColors& colors);
std::string tree_section(const Model& m);
std::string roofline_section(const Model& m, const AgentColors& colors);

std::string facts_section(const Model& m);
std::string workloads_section(const Model& m);
std::string problems_section(const std::vector<Problem>& problems);
std::string list_section(const std::vector<std::string>& items, std::string_view empty);
std::string winner_section(const Model& m);
/// The line under the title; "" when there is nothing to sum up.
std::string summary_line(const Model& m);

}  // namespace kernelarc::report_page
