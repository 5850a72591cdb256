// What every command that evaluates candidates through the guard shares: the guard's flags, the
// oracle and guard built from them, and the printed report (a table per workload, the
// environment, the baselines) with the optional JSON traces.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "core/problem.h"
#include "eval/guard.h"
#include "oracle/oracle.h"

namespace kernelarc {

struct GuardFlags {
  std::string json_path;
  std::string workspace = ".kernelarc";
  std::string device = "cpu";
  std::string python;
  std::string cflags;
  std::vector<std::string> workloads;
  int trials = GuardOptions{}.correctness_trials;
  int warmup = GuardOptions{}.warmup;
  int iterations = GuardOptions{}.iterations;
  double budget_s = GuardOptions{}.timing_budget_s;
  double baseline_warmup_limit_s = OracleOptions{}.warmup_limit_s;
  /// GuardOptions::checked_timed_calls; no flag: the search sets it for its screening guard.
  int checked_timed_calls = 0;
  int timeout_ms = 10'000;
  uint64_t seed = 200;
  bool no_baseline = false;
  /// Not a flag: the cores the guard's worker runs on (a search's CPU workers split them); empty
  /// = all of this process's.
  std::vector<int> cpus;
  /// Not a flag: the kernelarc executable hosting the workers, for programs that are not it
  /// (tools/); empty = this process.
  std::filesystem::path worker_executable;
};

/// An oracle and a guard configured from the flags.
class GuardSession {
 public:
  explicit GuardSession(const GuardFlags& flags);

  Guard& guard() { return *guard_; }
  Oracle& oracle() { return *oracle_; }
  const GuardOptions& options() const { return options_; }

  /// The workloads --workloads selects (uuid prefixes), or all; InputError for a prefix no
  /// workload has.
  std::vector<Workload> select_workloads(const Problem& problem) const;

  /// Evaluates, prints the report, writes --json; true when every workload passed.
  /// `annotate`, when given, may add to the traces (diagnosed already) before they are reported.
  bool evaluate_and_report(const Problem& problem, const Solution& solution, std::ostream& out,
                           const std::function<void(std::vector<Trace>&)>& annotate = {});

 private:
  GuardFlags flags_;
  GuardOptions options_;
  std::unique_ptr<Oracle> oracle_;
  std::unique_ptr<Guard> guard_;
};

}  // namespace kernelarc
