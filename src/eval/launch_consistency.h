// Whether the timed runs of a workload launched the same work. A run that launched other
// kernels than the rest took another path, which is how a candidate that recognizes repeated
// inputs, or guesses where timing starts, would do less work: a reward hack. The launches'
// geometry (grid, block, dynamic shared memory) may follow the inputs honestly (a mixture of
// experts sizes each expert's product by its routing, as an eager loop over experts does); then
// the runs the guard did not audit must not be faster than those it did, since less work on runs
// nobody checks shows there.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace kernelarc {

/// One timed run: what it launched (the device's signatures, "name|grid|block|shared"), whether
/// the guard checked its outputs, and its time.
struct TimedLaunches {
  std::vector<std::string> signatures;
  bool checked = false;
  bool timed = true;  ///< false for an audit whose time is not a sample (the twin)
  double ns = 0;
};

/// The verdict over a workload's timed runs.
struct LaunchConsistency {
  std::optional<std::string> violation;  ///< why the runs are a reward hack, if they are
  bool geometry_varies = false;          ///< the same kernels, launched with other shapes
};

/// Unchecked runs faster than this share of the checked runs' median, with a geometry that
/// varies, are a violation (honest data-dependent runs differ by a few percent).
constexpr double kUncheckedFastestShare = 0.85;

LaunchConsistency launch_consistency(const std::vector<TimedLaunches>& runs);

/// The kernel's (or copy's) name: the signature up to its first '|'.
std::string launch_name(const std::string& signature);

}  // namespace kernelarc
