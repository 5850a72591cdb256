// The page's search tree: each candidate placed by its parent, coloured by its outcome, the
// winner's lineage drawn thick, and the table of all candidates below.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "app/report_page_text.h"
#include "app/report_sections.h"
#include "app/svg_chart.h"

namespace kernelarc::report_page {

namespace {

/// Depth from a root for x; rows for y, a node on its first child's row so that a chain of
/// refinements reads as one straight line and the rows needed are the tree's leaves.
struct TreeLayout {
  std::vector<int> depth, row;
  std::vector<std::optional<std::size_t>> parent;
  std::vector<bool> placed;
  int rows = 0, max_depth = 0;

  void place(std::size_t node, int at_depth, std::optional<std::size_t> from,
             const std::vector<std::vector<std::size_t>>& children) {
    placed[node] = true;
    depth[node] = at_depth;
    parent[node] = from;
    max_depth = std::max(max_depth, at_depth);
    bool leaf = true;
    for (const std::size_t child : children[node]) {
      if (placed[child]) continue;
      place(child, at_depth + 1, node, children);
      if (leaf) row[node] = row[child];
      leaf = false;
    }
    if (leaf) row[node] = rows++;
  }
};

TreeLayout layout_tree(const std::vector<Candidate>& candidates) {
  const std::size_t n = candidates.size();
  std::map<int64_t, std::size_t> index;
  for (std::size_t i = 0; i < n; ++i) index.emplace(candidates[i].id, i);
  std::vector<std::vector<std::size_t>> children(n);
  std::vector<bool> has_parent(n, false);
  for (std::size_t i = 0; i < n; ++i) {
    if (!candidates[i].parent) continue;
    const auto found = index.find(*candidates[i].parent);
    if (found == index.end() || found->second == i) continue;
    children[found->second].push_back(i);
    has_parent[i] = true;
  }
  TreeLayout layout{std::vector<int>(n, 0), std::vector<int>(n, 0),
                    std::vector<std::optional<std::size_t>>(n), std::vector<bool>(n, false)};
  for (std::size_t i = 0; i < n; ++i)
    if (!has_parent[i]) layout.place(i, 0, std::nullopt, children);
  // What is left hangs off a cycle of parent ids; its first node is drawn as a root.
  for (std::size_t i = 0; i < n; ++i)
    if (!layout.placed[i]) layout.place(i, 0, std::nullopt, children);
  return layout;
}

std::string candidates_table(const Model& m) {
  std::string out = fmt::format(
      "<details><summary>All {} candidates</summary>\n<table class=\"cands\"><thead><tr>"
      "<th>seq</th><th>id</th><th>agent</th><th>parent</th><th>status</th><th>time (ms)</th>"
      "<th>speedup</th><th>label</th></tr></thead><tbody>\n",
      m.candidates.size());
  for (const Candidate& c : m.candidates)
    out += fmt::format(
        "<tr{}><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td><td class=\"num\">{}"
        "</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td></tr>\n",
        c.winner ? " class=\"win\"" : "", c.seq, c.id, escape(c.agent),
        c.parent ? std::to_string(*c.parent) : "", escape(c.status),
        c.ms ? ms_text(*c.ms) + ms_interval_text(c.ci_lo, c.ci_hi) : "",
        c.speedup ? speedup_text(*c.speedup) : "", escape(c.label));
  return out + "</tbody></table></details>\n";
}
struct TreeColors {
  std::string pale = "#c7e9c0", dark = "#00682c", failed = "#d62728", other = "#b0b0b0";
};

/// Where the tree's nodes go: x by depth, y by row, all of radius r.
struct TreeView {
  const std::vector<Candidate>& cs;
  const TreeLayout& layout;
  const svg::Scale& x;
  double top, row_h, r;

  double y(std::size_t i) const { return top + row_h * (layout.row[i] + 0.5); }
};

void draw_tree_edges(svg::Canvas& canvas, const TreeView& v) {
  for (int pass = 0; pass < 2; ++pass)  // the lineage last, on top
    for (std::size_t i = 0; i < v.cs.size(); ++i) {
      if (!v.layout.parent[i]) continue;
      const std::size_t p = *v.layout.parent[i];
      const bool lineage = v.cs[i].lineage && v.cs[p].lineage;
      if (lineage != (pass == 1)) continue;
      const double px = v.x(v.layout.depth[p]), cx = v.x(v.layout.depth[i]);
      canvas.polyline(
          {{px, v.y(p)}, {(px + cx) / 2, v.y(p)}, {(px + cx) / 2, v.y(i)}, {cx, v.y(i)}},
          lineage ? svg::Style::stroked("#222", std::min(3.0, v.r + 1)).css("tree-edge lineage")
                  : svg::Style::stroked("#c4c4c4").css("tree-edge"));
    }
}

/// Darker is faster: a passed node's shade is its log speedup as a fraction of the best one's.
std::string tree_node_fill(const Candidate& c, double best, const TreeColors& tint) {
  switch (outcome_of(c)) {
    case Outcome::Passed: {
      const double t = usable_speedup(c) && best > 1 && *c.speedup > 1
                           ? std::log(*c.speedup) / std::log(best)
                           : 0;
      return svg::mix_color(tint.pale, tint.dark, 0.15 + 0.85 * t);
    }
    case Outcome::Failed:
      return tint.failed;
    case Outcome::Other:
      break;
  }
  return tint.other;
}

void draw_tree_nodes(svg::Canvas& canvas, const TreeView& v, const TreeColors& tint) {
  double best = 1;
  for (const Candidate& c : v.cs)
    if (usable_speedup(c)) best = std::max(best, *c.speedup);
  for (std::size_t i = 0; i < v.cs.size(); ++i) {
    const Candidate& c = v.cs[i];
    std::string tooltip = candidate_tooltip(c);
    if (c.parent && !v.layout.parent[i])
      tooltip += fmt::format("\nparent id {} is not in this report", *c.parent);
    const double cx = v.x(v.layout.depth[i]), cy = v.y(i);
    canvas.circle(cx, cy, v.r,
                  svg::Style::filled(tree_node_fill(c, best, tint))
                      .outline(v.r >= 3 ? "#fff" : "none", 0.8)
                      .css("tree-node"),
                  tooltip);
    if (c.winner) {
      canvas.circle(cx, cy, v.r + 3.5, svg::Style::stroked("#222", 1.8).css("winner"));
      canvas.text(cx + v.r + 8, cy + 4, c.speedup ? "winner " + speedup_text(*c.speedup) : "winner",
                  svg::TextStyle().strong());
    }
  }
}

}  // namespace

std::string tree_section(const Model& m) {
  if (m.candidates.empty()) return sentence("No candidates were proposed, so there is no tree.");
  const std::vector<Candidate>& cs = m.candidates;
  const TreeLayout layout = layout_tree(cs);

  const TreeColors tint;
  const std::vector<svg::LegendEntry> entries = {
      {"passed (darker is faster)", svg::mix_color(tint.pale, tint.dark, 0.6)},
      {"failed", tint.failed},
      {"not evaluated or other", tint.other},
      {"winner's lineage", "#222", svg::LegendEntry::Mark::Line, 3},
      {"winner", "#222", svg::LegendEntry::Mark::Ring}};
  const double left = 30, right = 110;
  const double legend_h = svg::legend_height(entries, kWidth - left - right);
  const double top = 14 + legend_h + 12;
  // Up to ~900 units of rows, however many leaves: the chart stays on a screen and zooms.
  const double row_h = std::min(18.0, 900.0 / std::max(1, layout.rows));
  const double bottom = top + row_h * layout.rows;
  const int columns = std::max(1, layout.max_depth);
  const double col_w = std::min(90.0, (kWidth - left - right) / columns);
  const double r = std::clamp(std::min(row_h * 0.38, col_w * 0.3), 0.8, 5.5);
  const svg::Frame frame{left, top - 6, left + col_w * columns, bottom + 6};
  svg::Canvas canvas(kWidth, frame.bottom + 46, "Search tree of candidates");
  svg::legend(canvas, left, 10, kWidth - left - right, entries);
  svg::Scale x = svg::Scale::linear(0, columns, left, frame.right);
  x.set_min_tick_step(1);
  x_axis(canvas, x, frame, "depth (edits from a root)");

  const TreeView view{cs, layout, x, top, row_h, r};
  draw_tree_edges(canvas, view);
  draw_tree_nodes(canvas, view, tint);
  std::size_t roots = 0;
  for (std::size_t i = 0; i < cs.size(); ++i) roots += layout.parent[i] ? 0 : 1;
  return canvas.finish() +
         fmt::format(
             "\n<p class=\"note\">{} candidates, {} root{}, depth up to {}. Hover a node "
             "for its id, label and time.</p>\n",
             cs.size(), roots, roots == 1 ? "" : "s", layout.max_depth) +
         candidates_table(m);
}

}  // namespace kernelarc::report_page
