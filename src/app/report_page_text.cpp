#include "app/report_page_text.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/eval_status.h"

namespace kernelarc::report_page {

std::string ms_text(double ms) {
  if (!std::isfinite(ms)) return "n/a";
  if (ms == 0) return "0";
  const double rounded = std::stod(fmt::format("{:.3e}", ms));
  const int decimals = std::max(0, 3 - static_cast<int>(std::floor(std::log10(std::abs(rounded)))));
  return fmt::format("{:.{}f}", ms, decimals);
}

std::string flops_text(double gflops) {
  return gflops >= 1000 ? fmt::format("{:.4g} TFLOP/s", gflops / 1000)
                        : fmt::format("{:.4g} GFLOP/s", gflops);
}

std::string speedup_text(double speedup) {
  if (!std::isfinite(speedup)) return "n/a";
  return std::abs(speedup) >= 0.1 ? fmt::format("{:.2f}x", speedup)
                                  : fmt::format("{:.2g}x", speedup);
}

bool valid_interval(const std::optional<double>& lo, const std::optional<double>& hi) {
  return lo && hi && *lo > 0 && *hi > 0 && *lo <= *hi;
}

std::string ms_interval_text(const std::optional<double>& lo, const std::optional<double>& hi) {
  if (!valid_interval(lo, hi)) return "";
  return fmt::format(" ({}\u2013{})", ms_text(*lo), ms_text(*hi));
}

std::string speedup_interval_text(const std::optional<double>& lo,
                                  const std::optional<double>& hi) {
  if (!valid_interval(lo, hi)) return "";
  return fmt::format(" ({:.2f}\u2013{:.2f})", *lo, *hi);
}

bool usable_speedup(const Candidate& c) {
  return c.passed && c.speedup && *c.speedup > 0;
}

Outcome outcome_of(const Candidate& c) {
  if (c.passed) return Outcome::Passed;
  const std::optional<EvalStatus> status = status_from_name(c.status);
  return status && *status != EvalStatus::Passed ? Outcome::Failed : Outcome::Other;
}

std::string candidate_tooltip(const Candidate& c) {
  std::string text =
      fmt::format("id {} (seq {}, agent {})\n{}\n{}", c.id, c.seq, c.agent, c.label, c.status);
  if (c.ms) text += fmt::format(", {} ms{}", ms_text(*c.ms), ms_interval_text(c.ci_lo, c.ci_hi));
  if (c.speedup) text += ", " + speedup_text(*c.speedup);
  if (c.winner) text += "\nwinner";
  return text;
}

std::string sentence(std::string_view text) {
  return fmt::format("<p class=\"empty\">{}</p>\n", escape(text));
}

}  // namespace kernelarc::report_page
