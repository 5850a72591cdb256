// The page's account of the result: facts, times per workload, bench problems, the lists of
// conclusions and diagnosis, the winner with its diff, and the summary line under the title.
#include <algorithm>
#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "app/report_page_text.h"
#include "app/report_sections.h"
#include "app/svg_chart.h"

namespace kernelarc::report_page {

namespace {

/// Bar labels keep one colour across all workloads, by first appearance.
std::map<std::string, std::string> bar_colors(const std::vector<Workload>& workloads) {
  std::map<std::string, std::string> colors;
  for (const Workload& w : workloads)
    for (const Bar& bar : w.bars)
      if (!colors.count(bar.label)) colors[bar.label] = svg::palette_color(colors.size());
  return colors;
}

std::string workload_chart(const Workload& w, const std::map<std::string, std::string>& colors) {
  const double width = 480, row = 24, bar_h = 15, top = 10;
  std::size_t longest = 0;
  double most = 0;
  for (const Bar& bar : w.bars) {
    longest = std::max(longest, bar.label.size());
    most = std::max(most, bar.ms);
    if (valid_interval(bar.lo, bar.hi)) most = std::max(most, *bar.hi);
  }
  const double left = std::min(170.0, 14 + 6.4 * static_cast<double>(longest));
  const svg::Frame frame{left, top, width - 80, top + row * static_cast<double>(w.bars.size()) + 4};
  svg::Canvas canvas(width, frame.bottom + 44, "Times for " + w.name);
  const svg::Scale x = svg::Scale::linear(0, most > 0 ? most : 1, left, frame.right);
  x_axis(canvas, x, frame, "time (ms), lower is better");
  for (std::size_t i = 0; i < w.bars.size(); ++i) {
    const Bar& bar = w.bars[i];
    const double cy = top + row * (static_cast<double>(i) + 0.5) + 2;
    const std::string value = ms_text(bar.ms) + " ms";
    canvas.text(left - 8, cy + 4, bar.label, svg::TextStyle().end());
    canvas.rect(left, cy - bar_h / 2, x(std::max(0.0, bar.ms)) - left, bar_h,
                svg::Style::filled(colors.at(bar.label)).css("wl-bar"),
                bar.label + ": " + value + ms_interval_text(bar.lo, bar.hi));
    double end = x(std::max(0.0, bar.ms));
    if (valid_interval(bar.lo, bar.hi)) {
      canvas.error_bar_h(x(*bar.lo), x(*bar.hi), cy, 4, "#222");
      end = std::max(end, x(*bar.hi));
    }
    canvas.text(end + 5, cy + 4, value, svg::TextStyle().sized(10.5));
  }
  return canvas.finish();
}

std::string status_color(std::string_view status) {
  if (status == "won") return "#59a14f";
  if (status == "lost") return "#e15759";
  return "#9aa0a6";
}

std::string problems_chart(const std::vector<Problem>& problems) {
  std::vector<double> values = {1.0};
  std::size_t longest = 0;
  for (const Problem& p : problems) {
    longest = std::max(longest, p.name.size());
    if (p.speedup && *p.speedup > 0) values.push_back(*p.speedup);
    if (valid_interval(p.lo, p.hi)) values.push_back(*p.lo), values.push_back(*p.hi);
  }
  if (values.size() == 1) return sentence("No problem has a speedup to chart.");
  const double row = 22, bar_h = 13, top = 22;
  const double left = std::min(300.0, 18 + 7.2 * static_cast<double>(longest));
  const svg::Frame frame{left, top, kWidth - 170,
                         top + row * static_cast<double>(problems.size()) + 4};
  svg::Canvas canvas(kWidth, frame.bottom + 46, "Speedup per problem");
  const auto [lo, hi] = svg::log_domain(values, 1.2);
  const svg::Scale x = svg::Scale::log10(lo, hi, left, frame.right);
  x_axis(canvas, x, frame, "speedup, >1x is faster (log scale; bars start at 1x)",
         [](double v) { return svg::tick_text(v) + "x"; });
  for (std::size_t i = 0; i < problems.size(); ++i) {
    const Problem& p = problems[i];
    const double cy = top + row * (static_cast<double>(i) + 0.5) + 2;
    canvas.text(left - 8, cy + 4, p.name, svg::TextStyle().end());
    std::string value = "n/a";
    if (p.speedup && *p.speedup > 0) {
      value = speedup_text(*p.speedup) + speedup_interval_text(p.lo, p.hi);
      const double a = x(1.0), b = x(*p.speedup);
      canvas.rect(std::min(a, b), cy - bar_h / 2, std::max(1.0, std::abs(b - a)), bar_h,
                  svg::Style::filled(status_color(p.status)).css("prob-bar"),
                  fmt::format("{}: {} ({})", p.name, value, p.status));
      if (valid_interval(p.lo, p.hi)) canvas.error_bar_h(x(*p.lo), x(*p.hi), cy, 4, "#222");
    }
    canvas.text(kWidth - 12, cy + 4, value, svg::TextStyle().sized(10.5).end());
  }
  canvas.line(x(1.0), top - 6, x(1.0), frame.bottom, svg::Style::stroked("#222", 1.2));
  canvas.text(x(1.0), top - 9, "1.0x", svg::TextStyle().sized(10).middle());
  return canvas.finish() + "\n";
}

/// Unchanged lines more than this far from a change fold into one "unchanged lines" marker,
/// as `diff -u` keeps three lines of context.
constexpr std::size_t kDiffContext = 3;

std::string diff_block(const SourceFile& file) {
  const std::vector<DiffLine>& lines = *file.diff;
  std::size_t added = 0, removed = 0;
  for (const DiffLine& line : lines) added += line.op == '+', removed += line.op == '-';
  if (added + removed == 0) return sentence("Identical to the parent's " + file.path + ".");
  std::vector<bool> near(lines.size(), false);
  for (std::size_t i = 0; i < lines.size(); ++i)
    if (lines[i].op != ' ') {
      const std::size_t from = i >= kDiffContext ? i - kDiffContext : 0;
      for (std::size_t k = from; k < std::min(lines.size(), i + kDiffContext + 1); ++k)
        near[k] = true;
    }
  std::string out = fmt::format(
      "<p class=\"note\">Against the parent: <span class=\"plus\">+{}</span> "
      "<span class=\"minus\">\u2212{}</span> lines</p>\n<pre class=\"diff\"><code>",
      added, removed);
  for (std::size_t i = 0; i < lines.size();) {
    if (!near[i]) {
      std::size_t k = i;
      while (k < lines.size() && !near[k]) ++k;
      out += fmt::format("<span class=\"skip\">\u22ef {} unchanged line{}\n</span>", k - i,
                         k - i == 1 ? "" : "s");
      i = k;
      continue;
    }
    const DiffLine& line = lines[i++];
    const char* kind = line.op == '+' ? "add" : line.op == '-' ? "del" : "ctx";
    out += fmt::format("<span class=\"{}\">{}{}\n</span>", kind, line.op, escape(line.text));
  }
  return out + "</code></pre>\n";
}

std::size_t line_count(const std::string& text) {
  if (text.empty()) return 0;
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')) +
         (text.back() == '\n' ? 0 : 1);
}

}  // namespace

std::string facts_section(const Model& m) {
  if (m.facts.empty()) return sentence("No facts recorded.");
  std::string out = "<table class=\"facts\"><tbody>\n";
  for (const auto& [label, value] : m.facts)
    out += fmt::format("<tr><th scope=\"row\">{}</th><td>{}</td></tr>\n", escape(label),
                       escape(value));
  return out + "</tbody></table>\n";
}

std::string workloads_section(const Model& m) {
  if (m.workloads.empty()) return sentence("No per-workload times in this report.");
  const auto colors = bar_colors(m.workloads);
  std::string out = "<div class=\"charts\">\n";
  for (const Workload& w : m.workloads) {
    out += fmt::format("<figure><figcaption>{}</figcaption>\n", escape(w.name));
    out += w.bars.empty() ? sentence("No times for this workload.") : workload_chart(w, colors);
    out += "</figure>\n";
  }
  return out +
         "</div>\n<p class=\"note\">Median times; whiskers show the interval where one was "
         "measured.</p>\n";
}

std::string problems_section(const std::vector<Problem>& problems) {
  if (problems.empty()) return sentence("The bench directory lists no problems.");
  std::string out =
      "<table class=\"problems\"><thead><tr><th>problem</th><th>status</th><th>speedup "
      "(interval)</th><th>SOL score</th><th>kernelarc</th></tr></thead><tbody>\n";
  for (const Problem& p : problems)
    out += fmt::format(
        "<tr><td>{}</td><td><span class=\"status\" style=\"background:{}\">{}</span></td>"
        "<td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td></tr>\n",
        escape(p.name), status_color(p.status), escape(p.status),
        p.speedup ? speedup_text(*p.speedup) + speedup_interval_text(p.lo, p.hi) : "n/a",
        p.sol_score ? fmt::format("{:.2f}", *p.sol_score) : "", escape(p.kernelarc));
  return out + "</tbody></table>\n" + problems_chart(problems);
}

std::string list_section(const std::vector<std::string>& items, std::string_view empty) {
  if (items.empty()) return sentence(empty);
  std::string out = "<ul>\n";
  for (const std::string& item : items) out += fmt::format("<li>{}</li>\n", escape(item));
  return out + "</ul>\n";
}

std::string winner_section(const Model& m) {
  if (!m.winner) {
    const bool any_passed = std::any_of(m.candidates.begin(), m.candidates.end(),
                                        [](const Candidate& c) { return c.passed; });
    return sentence(any_passed ? "No winner was recorded in this report."
                               : "No candidate passed, so there is no winner.");
  }
  const Winner& w = *m.winner;
  std::string out = fmt::format("<p class=\"winner-label\"><strong>{}</strong>", escape(w.label));
  for (const Candidate& c : m.candidates)
    if (c.winner) {
      out += fmt::format(" \u2014 id {}, agent {}", c.id, escape(c.agent));
      if (c.ms) out += fmt::format(", {} ms{}", ms_text(*c.ms), ms_interval_text(c.ci_lo, c.ci_hi));
      if (c.speedup)
        out += fmt::format(", {} over the baseline in the search", speedup_text(*c.speedup));
      break;
    }
  out += fmt::format("</p>\n<p>Parent: {}</p>\n",
                     w.parent_label ? escape(*w.parent_label) : "none (a root candidate)");
  if (w.changes && !w.changes->empty())
    out += fmt::format("<p>Changed from the parent: <code>{}</code></p>\n", escape(*w.changes));
  if (w.files.empty()) return out + sentence("No source files were stored with the winner.");
  for (const SourceFile& file : w.files) {
    out += fmt::format("<h3><code>{}</code></h3>\n", escape(file.path));
    const std::string code =
        fmt::format("<pre class=\"code\"><code>{}</code></pre>\n", escape(file.content));
    if (!file.diff) {
      out += code;
      continue;
    }
    out += diff_block(file);
    out += fmt::format("<details><summary>Full source ({} lines)</summary>\n{}</details>\n",
                       line_count(file.content), code);
  }
  return out;
}

std::string summary_line(const Model& m) {
  std::vector<std::string> parts;
  if (!m.candidates.empty()) {
    const auto passed = std::count_if(m.candidates.begin(), m.candidates.end(),
                                      [](const Candidate& c) { return c.passed; });
    parts.push_back(fmt::format("{} candidates, {} passed", m.candidates.size(), passed));
  }
  for (const Candidate& c : m.candidates)
    if (c.winner) {
      std::string text = fmt::format("winner id {} ({})", c.id, c.agent);
      if (c.ms) text += ": " + ms_text(*c.ms) + " ms";
      if (c.speedup) text += ", " + speedup_text(*c.speedup) + " over the baseline in the search";
      parts.push_back(text);
      break;
    }
  if (m.kind == "bench" && m.problems) {
    std::map<std::string, int> counts;
    for (const Problem& p : *m.problems) ++counts[p.status.empty() ? "no status" : p.status];
    std::vector<std::string> tally;
    for (const auto& [status, count] : counts) tally.push_back(fmt::format("{} {}", count, status));
    parts.push_back(fmt::format("{} problems: {}", m.problems->size(), fmt::join(tally, ", ")));
  }
  if (parts.empty()) return "";
  return fmt::format("<p class=\"summary\">{}.</p>\n",
                     escape(fmt::format("{}", fmt::join(parts, "; "))));
}

}  // namespace kernelarc::report_page
