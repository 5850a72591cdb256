// Summary statistics of timing samples.
#pragma once

#include <optional>
#include <vector>

namespace kernelarc {

struct TimingSummary {
  int samples = 0;
  double median = 0;
  /// Distribution-free 95% confidence interval of the median, from order statistics
  /// (ranks n/2 -+ 0.98*sqrt(n)); equal to [min, max] for fewer than 6 samples.
  double ci_low = 0;
  double ci_high = 0;
  double p10 = 0;
  double p90 = 0;
  double min = 0;
  double max = 0;
  double mean = 0;
};

/// Summarizes samples (any unit; the summary keeps it). Empty input gives all zeros.
TimingSummary summarize(std::vector<double> samples);

/// A time as every layer above the guard keeps it: the median with its 95% interval (as in
/// TimingSummary), in milliseconds. A candidate's time at a workload, a contender's time pooled
/// over a benchmark's rounds.
struct MedianInterval {
  double median_ms = 0;
  double ci_low_ms = 0;
  double ci_high_ms = 0;
  int samples = 0;
};

/// The median and interval of a summary of milliseconds.
MedianInterval median_interval(const TimingSummary& summary_ms);
/// From samples in milliseconds; nullopt when there are none.
std::optional<MedianInterval> median_interval(const std::vector<double>& samples_ms);

}  // namespace kernelarc
