// Lines saying how the reference's draws go, a workload at a time. A PyTorch reference of a
// GPU-sized workload runs for minutes per draw on a CPU, and a search that printed nothing
// meanwhile looked hung.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <string>

#include "core/problem.h"

namespace kernelarc {

/// Where the oracle's progress lines go; empty: nowhere.
using ProgressLines = std::function<void(const std::string&)>;

/// Told of each job of a batch (one trial of a workload) as it starts and ends.
class JobObserver {
 public:
  virtual ~JobObserver() = default;
  virtual void started(const std::string& id) = 0;
  /// Every started job ends, failed when its interpreter died under it.
  virtual void ended(const std::string& id, bool ok) = 0;
};

/// Follows the jobs of one batch of draws: a line when a workload's first job starts (its axes
/// and the bytes of its inputs and outputs), another when its last one ends (how long it took).
class DrawProgress : public JobObserver {
 public:
  /// `kind` names one job in the lines: "draw", "twin draw".
  DrawProgress(const Problem& problem, std::string kind, ProgressLines out);
  /// Job `id` draws for `workload` (which must outlive this object).
  void add(const std::string& id, const Workload& workload);
  void started(const std::string& id) override;
  void ended(const std::string& id, bool ok) override;

 private:
  struct Draws {
    const Workload* workload = nullptr;
    int jobs = 0;
    int ended = 0;
    int failed = 0;
    bool started = false;
    std::chrono::steady_clock::time_point start;
  };
  std::string counted(int jobs) const;

  const Problem& problem_;
  std::string kind_;
  ProgressLines out_;
  std::map<std::string, std::string> workload_of_job_;
  std::map<std::string, Draws> draws_;  ///< by workload uuid
};

}  // namespace kernelarc
