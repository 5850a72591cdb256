// What the optimizer's benchmark programs share: the built-in problems of a device, a guard
// set up for benchmarking (fewer draws and timed runs than the CLI's defaults, no PyTorch
// baselines), and a progress sink that keeps the candidates' events.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "optimize/orchestrator.h"

namespace kernelarc {

/// The problem directories under problems/cpu or problems/cuda of the source tree, sorted.
std::vector<std::string> builtin_problems(const std::string& device);

struct BenchGuardOptions {
  std::string device = "cpu";
  std::filesystem::path workspace = ".kernelarc-bench";
  int trials = 1;
  int iterations = 5;
};

/// An oracle and a guard that live as long as the benchmark.
class BenchGuard {
 public:
  explicit BenchGuard(const BenchGuardOptions& options);
  ~BenchGuard();
  Guard& guard() { return *guard_; }

 private:
  std::unique_ptr<Oracle> oracle_;
  std::unique_ptr<Guard> guard_;
};

/// Keeps every candidate event (for "how many candidates until ..."), prints nothing.
class RecordingProgress : public ProgressSink {
 public:
  void candidate(const ProgressView&, const CandidateEvent& event) override {
    events.push_back(event);
  }
  void message(const std::string&) override {}
  std::vector<CandidateEvent> events;
};

}  // namespace kernelarc
