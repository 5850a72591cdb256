// What the optimizer's benchmark programs share: the built-in problems of a device, a guard
// set up for benchmarking (fewer draws and timed runs than the CLI's defaults, no PyTorch
// baselines), and a progress sink that keeps the candidates' events.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "app/guard_session.h"
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

/// The flags every optimizer benchmark takes.
struct BenchFlags {
  std::vector<std::string> problems;  ///< empty = the built-in ones of the device
  std::string device = "cpu";
  std::string workspace;
  int64_t budget = 24;
  int trials = 1;
  int iterations = 5;

  std::vector<std::string> problem_dirs() const;
  BenchGuardOptions guard_options() const;
};
/// Registers BenchFlags' options (the workspace's default is the caller's initial value).
void add_bench_flags(CLI::App& app, BenchFlags& flags);

/// Parses the command line and runs `run`; an InputError is printed as one line, exit code 2.
int run_bench(CLI::App& app, int argc, char** argv, const std::function<int()>& run);

/// The guard session (oracle and guard) that lives as long as the benchmark.
class BenchGuard {
 public:
  explicit BenchGuard(const BenchGuardOptions& options);
  ~BenchGuard();
  Guard& guard() { return session_->guard(); }

 private:
  std::unique_ptr<GuardSession> session_;
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
