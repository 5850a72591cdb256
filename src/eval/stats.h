// Summary statistics of timing samples.
#pragma once

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

}  // namespace kernelarc
