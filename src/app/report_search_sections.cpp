// The page's charts of the search besides its tree: best speedup against proposal order, and
// the roofline.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <map>
#include <numbers>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "app/report_page_text.h"
#include "app/report_sections.h"
#include "app/svg_chart.h"

namespace kernelarc::report_page {

namespace {

/// Best-so-far as a staircase over seq, carried on to `last_seq` so that a plateau is visible.
std::vector<svg::Point> best_steps(const std::vector<const Candidate*>& passed, double last_seq,
                                   const svg::Scale& x, const svg::Scale& y) {
  std::vector<svg::Point> points;
  double best = 0;
  for (const Candidate* c : passed) {
    if (*c->speedup <= best) continue;
    if (!points.empty()) points.push_back({x(static_cast<double>(c->seq)), y(best)});
    best = *c->speedup;
    points.push_back({x(static_cast<double>(c->seq)), y(best)});
  }
  if (!points.empty()) points.push_back({x(last_seq), y(best)});
  return points;
}

/// The candidates in proposal order, and which of them the progress chart plots or crosses.
struct ProgressMarks {
  std::vector<const Candidate*> ordered, plotted, failed;
  std::size_t passed = 0, not_evaluated = 0;
};

ProgressMarks progress_marks(const Model& m) {
  ProgressMarks marks;
  for (const Candidate& c : m.candidates) marks.ordered.push_back(&c);
  std::stable_sort(marks.ordered.begin(), marks.ordered.end(),
                   [](const Candidate* a, const Candidate* b) { return a->seq < b->seq; });
  for (const Candidate* c : marks.ordered) {
    if (c->passed) ++marks.passed;
    if (outcome_of(*c) == Outcome::Other) ++marks.not_evaluated;
    if (usable_speedup(*c))
      marks.plotted.push_back(c);
    else if (!c->passed)
      marks.failed.push_back(c);
  }
  return marks;
}

std::vector<svg::LegendEntry> progress_legend(const ProgressMarks& marks,
                                              const AgentColors& colors) {
  std::vector<svg::LegendEntry> entries = colors.legend();
  if (!marks.failed.empty())
    entries.push_back({marks.not_evaluated > 0 ? "failed or not evaluated" : "failed", "#666",
                       svg::LegendEntry::Mark::Cross});
  entries.push_back({"best so far, per agent", "#999", svg::LegendEntry::Mark::Line, 1.5});
  entries.push_back({"best so far, overall", "#222", svg::LegendEntry::Mark::Line, 3});
  if (std::any_of(marks.plotted.begin(), marks.plotted.end(),
                  [](const Candidate* c) { return c->winner; }))
    entries.push_back({"winner", "#222", svg::LegendEntry::Mark::Ring});
  return entries;
}

/// A dot per plotted candidate (ringed for the winner), a cross per failed one on its own row.
void draw_progress_marks(svg::Canvas& canvas, const ProgressMarks& marks, const svg::Scale& x,
                         const svg::Scale& y, const AgentColors& colors, double left,
                         double failed_row) {
  const std::vector<const Candidate*>& plotted = marks.plotted;
  const double r = plotted.size() > 300 ? 2.5 : plotted.size() > 80 ? 3.2 : 4;
  for (const Candidate* c : plotted) {
    const double cx = x(static_cast<double>(c->seq)), cy = y(*c->speedup);
    canvas.circle(cx, cy, r,
                  svg::Style::filled(colors(c->agent)).outline("#fff", 0.6).css("cand-dot"),
                  candidate_tooltip(*c));
    if (c->winner) canvas.circle(cx, cy, r + 4, svg::Style::stroked("#222", 1.8).css("winner"));
  }
  if (!marks.failed.empty())
    canvas.text(left - 7, failed_row + 4, "failed",
                svg::TextStyle().sized(10).end().colored("#666"));
  for (const Candidate* c : marks.failed)
    canvas.cross(x(static_cast<double>(c->seq)), failed_row, 3,
                 svg::Style::stroked(colors(c->agent), 1.5).css("cand-fail"),
                 candidate_tooltip(*c));
}

std::string progress_notes(const Model& m, const ProgressMarks& marks) {
  std::string out;
  const std::size_t unplotted = marks.passed - marks.plotted.size();
  if (unplotted > 0)
    out += fmt::format(
        "<p class=\"note\">{} passed candidate{} without a speedup over the baseline {} not "
        "plotted.</p>\n",
        unplotted, unplotted == 1 ? "" : "s", unplotted == 1 ? "is" : "are");
  out += fmt::format(
      "<p class=\"note\">{} candidates: {} passed, {} failed, {} not evaluated. Hover a mark for "
      "its id, label and time.</p>\n",
      m.candidates.size(), marks.passed, marks.failed.size() - marks.not_evaluated,
      marks.not_evaluated);
  return out;
}

}  // namespace

std::string progress_section(const Model& m, const AgentColors& colors) {
  const ProgressMarks marks = progress_marks(m);
  if (m.candidates.empty()) return sentence("No candidates were proposed.");
  if (marks.passed == 0)
    return sentence(fmt::format(
        "No candidate passed ({} proposed), so there is no speedup to plot.", m.candidates.size()));
  if (marks.plotted.empty())
    return sentence(
        "No passed candidate has a speedup over the baseline (the baseline has no time), so "
        "there is nothing to plot.");

  const std::vector<svg::LegendEntry> entries = progress_legend(marks, colors);
  const double left = 70, right = 24, plot_height = 300;
  const double legend_h = svg::legend_height(entries, kWidth - left - right);
  const double top = 14 + legend_h + 10;
  const double plot_bottom = top + plot_height;
  const double failed_row = plot_bottom + 18;
  const svg::Frame frame{left, top, kWidth - right, plot_bottom + (marks.failed.empty() ? 8 : 32)};
  svg::Canvas canvas(kWidth, frame.bottom + 46, "Best speedup against candidates");
  svg::legend(canvas, left, 10, kWidth - left - right, entries);

  const double first = static_cast<double>(marks.ordered.front()->seq);
  const double last = static_cast<double>(marks.ordered.back()->seq);
  const double pad = std::max(0.5, (last - first) * 0.02);
  svg::Scale x = svg::Scale::linear(first - pad, last + pad, left, frame.right);
  x.set_min_tick_step(1);
  std::vector<double> speedups = {1.0};
  for (const Candidate* c : marks.plotted) speedups.push_back(*c->speedup);
  const auto [lo, hi] = svg::log_domain(speedups, 1.15);
  const svg::Scale y = svg::Scale::log10(lo, hi, plot_bottom, top);
  x_axis(canvas, x, frame, "candidate (proposal order, seq)");
  y_axis(canvas, y, frame, "speedup over the baseline",
         [](double v) { return svg::tick_text(v) + "x"; });

  canvas.line(left, y(1.0), frame.right, y(1.0), svg::Style::stroked("#777").dashed("4 3"));
  canvas.text(frame.right - 4, y(1.0) - 5, "baseline 1x",
              svg::TextStyle().sized(10).end().colored("#666"));
  std::map<std::string, std::vector<const Candidate*>> by_agent;
  for (const Candidate* c : marks.plotted) by_agent[c->agent].push_back(c);
  for (const auto& [agent, list] : by_agent)
    canvas.polyline(best_steps(list, last, x, y),
                    svg::Style::stroked(colors(agent), 1.5).faded(0.6));
  canvas.polyline(best_steps(marks.plotted, last, x, y), svg::Style::stroked("#222", 2.5));
  draw_progress_marks(canvas, marks, x, y, colors, left, failed_row);
  return canvas.finish() + "\n" + progress_notes(m, marks);
}

namespace {

std::vector<svg::LegendEntry> roofline_legend(const std::vector<const Candidate*>& points,
                                              const AgentColors& colors) {
  std::vector<svg::LegendEntry> entries;
  std::vector<std::string> seen;
  for (const Candidate* c : points)
    if (std::find(seen.begin(), seen.end(), c->agent) == seen.end()) {
      seen.push_back(c->agent);
      entries.push_back({c->agent, colors(c->agent)});
    }
  entries.push_back(
      {"roof: min(peak, bandwidth \u00d7 intensity)", "#555", svg::LegendEntry::Mark::Line, 2});
  if (std::any_of(points.begin(), points.end(), [](const Candidate* c) { return c->winner; }))
    entries.push_back({"winner", "#222", svg::LegendEntry::Mark::Ring});
  return entries;
}

void draw_roof(svg::Canvas& canvas, const Roofline& roof, const svg::Scale& x, const svg::Scale& y,
               const svg::Frame& frame, double x_lo, double x_hi, double y_lo) {
  const double ridge = roof.peak_gflops / roof.bandwidth_gbs;
  // The sloped part starts where it enters the frame.
  const double x_start = std::max(x_lo, y_lo / roof.bandwidth_gbs);
  std::vector<svg::Point> roof_line;
  if (x_start < ridge) roof_line.push_back({x(x_start), y(roof.bandwidth_gbs * x_start)});
  roof_line.push_back({x(std::max(ridge, x_lo)), y(roof.peak_gflops)});
  roof_line.push_back({x(x_hi), y(roof.peak_gflops)});
  canvas.polyline(roof_line, svg::Style::stroked("#555", 2).css("roof"));
  canvas.text(frame.right - 4, y(roof.peak_gflops) - 6,
              fmt::format("peak {}{}", flops_text(roof.peak_gflops),
                          roof.peak_label.empty() ? "" : " (" + roof.peak_label + ")"),
              svg::TextStyle().end().colored("#444"));
  if (x_start < ridge) {
    const svg::Point a = roof_line[0], b = roof_line[1];
    const double angle = std::atan2(b.y - a.y, b.x - a.x) * 180 / std::numbers::pi;
    const double t = 0.55;
    canvas.text(a.x + (b.x - a.x) * t, a.y + (b.y - a.y) * t - 6,
                fmt::format("{:.4g} GB/s", roof.bandwidth_gbs),
                svg::TextStyle().middle().colored("#444").rotated(angle));
  }
}

void draw_roof_points(svg::Canvas& canvas, const Roofline& roof,
                      const std::vector<const Candidate*>& points, const svg::Scale& x,
                      const svg::Scale& y, const AgentColors& colors) {
  for (const Candidate* c : points) {
    const double attainable = std::min(roof.peak_gflops, roof.bandwidth_gbs * *c->intensity);
    const std::string tooltip =
        candidate_tooltip(*c) +
        fmt::format("\n{:.4g} GFLOP/s at {:.3g} FLOP/byte: {:.2f} of the roof", *c->gflops,
                    *c->intensity, *c->gflops / attainable);
    const double cx = x(*c->intensity), cy = y(*c->gflops);
    canvas.circle(
        cx, cy, 4.5,
        svg::Style::filled(colors(c->agent)).outline("#fff", 0.6).faded(0.9).css("roof-pt"),
        tooltip);
    if (c->winner) {
      canvas.circle(cx, cy, 8.5, svg::Style::stroked("#222", 1.8).css("winner"));
      canvas.text(cx + 11, cy - 8, "winner", svg::TextStyle().strong());
    }
  }
}

}  // namespace

std::string roofline_section(const Model& m, const AgentColors& colors) {
  if (!m.roofline || !(m.roofline->peak_gflops > 0) || !(m.roofline->bandwidth_gbs > 0))
    return sentence(
        "No roofline: this report has no measured peak compute and bandwidth for the device.");
  const Roofline& roof = *m.roofline;
  std::vector<const Candidate*> points;
  for (const Candidate& c : m.candidates)
    if (c.gflops && c.intensity && *c.gflops > 0 && *c.intensity > 0) points.push_back(&c);
  if (points.empty())
    return sentence(fmt::format(
        "No candidate has both an achieved GFLOP/s and an arithmetic intensity, so there is "
        "nothing to place under the roof (peak {}, {:.4g} GB/s).",
        flops_text(roof.peak_gflops), roof.bandwidth_gbs));

  const double ridge = roof.peak_gflops / roof.bandwidth_gbs;
  std::vector<double> xs = {ridge}, ys = {roof.peak_gflops};
  for (const Candidate* c : points) xs.push_back(*c->intensity), ys.push_back(*c->gflops);
  const auto [x_lo, x_hi] = svg::log_domain(xs, 3);
  const auto [y_lo, y_hi] = svg::log_domain(ys, 3);

  const std::vector<svg::LegendEntry> entries = roofline_legend(points, colors);
  const double left = 70, right = 24, plot_height = 340;
  const double top = 14 + svg::legend_height(entries, kWidth - left - right) + 10;
  const svg::Frame frame{left, top, kWidth - right, top + plot_height};
  svg::Canvas canvas(kWidth, frame.bottom + 46, "Roofline");
  svg::legend(canvas, left, 10, kWidth - left - right, entries);
  const svg::Scale x = svg::Scale::log10(x_lo, x_hi, left, frame.right);
  const svg::Scale y = svg::Scale::log10(y_lo, y_hi, frame.bottom, top);
  x_axis(canvas, x, frame, "arithmetic intensity (FLOP/byte, log scale)");
  y_axis(canvas, y, frame, "achieved GFLOP/s (log scale)");
  draw_roof(canvas, roof, x, y, frame, x_lo, x_hi, y_lo);
  draw_roof_points(canvas, roof, points, x, y, colors);
  return canvas.finish() +
         fmt::format(
             "\n<p class=\"note\">{} of {} candidates placed; the ridge is at {:.3g} "
             "FLOP/byte.</p>\n",
             points.size(), m.candidates.size(), ridge);
}

}  // namespace kernelarc::report_page
