#include "eval/stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace kernelarc {

namespace {

/// Linear interpolation between closest ranks, on sorted data.
double quantile(const std::vector<double>& sorted, double q) {
  const double position = q * static_cast<double>(sorted.size() - 1);
  const auto lower = static_cast<std::size_t>(std::floor(position));
  const auto upper = std::min(lower + 1, sorted.size() - 1);
  const double fraction = position - static_cast<double>(lower);
  return sorted[lower] + fraction * (sorted[upper] - sorted[lower]);
}

}  // namespace

TimingSummary summarize(std::vector<double> samples) {
  TimingSummary summary;
  if (samples.empty()) return summary;
  std::sort(samples.begin(), samples.end());
  const auto n = samples.size();
  summary.samples = static_cast<int>(n);
  summary.median = quantile(samples, 0.5);
  summary.p10 = quantile(samples, 0.1);
  summary.p90 = quantile(samples, 0.9);
  summary.min = samples.front();
  summary.max = samples.back();
  summary.mean = std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(n);
  // Binomial(n, 1/2) ranks around the median covering about 95%.
  const double half_width = 0.98 * std::sqrt(static_cast<double>(n));
  const double center = static_cast<double>(n) / 2.0;
  const auto low_rank = static_cast<long>(std::floor(center - half_width));
  const auto high_rank = static_cast<long>(std::ceil(center + half_width));
  summary.ci_low = samples[static_cast<std::size_t>(std::max(0L, low_rank))];
  summary.ci_high =
      samples[static_cast<std::size_t>(std::min<long>(static_cast<long>(n) - 1, high_rank))];
  return summary;
}

MedianInterval median_interval(const TimingSummary& summary_ms) {
  return {summary_ms.median, summary_ms.ci_low, summary_ms.ci_high, summary_ms.samples};
}

std::optional<MedianInterval> median_interval(const std::vector<double>& samples_ms) {
  if (samples_ms.empty()) return std::nullopt;
  return median_interval(summarize(samples_ms));
}

}  // namespace kernelarc
