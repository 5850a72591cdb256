// The bench service behind `kernelarc bench <suite-dir>`: kernelarc against what users already
// have. Per problem of the suite: kernelarc's best within the budget (the optimize machinery, in
// the workspace, so a rerun reuses a finished run and resumes an unfinished one), then the
// winner, cuBLASLt's default choice (GEMM), PyTorch eager and torch.compile (CUDA) re-measured
// side by side in interleaved rounds; bench.json and bench.md are rewritten after every problem,
// so a resume (or a wall-time chunk) loses at most the problem in progress. Every problem is read
// and recognized first: an unreadable one is a failed row, one that no family serves a "not
// served" row and one that no template serves a "no template" row (the baselines of both untimed
// unless baselines_always), and none stops the suite.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "app/bench_results.h"
#include "app/guard_session.h"
#include "optimize/orchestrator.h"

namespace kernelarc {

struct BenchOptions {
  std::string suite;                  ///< a directory of problem directories
  int64_t budget = 32;                ///< candidates kernelarc evaluates per problem
  std::vector<std::string> problems;  ///< only these (directory or definition names); empty: all
  bool resume = false;                ///< skip the problems bench.json already holds
  std::string out;                    ///< empty: WORKSPACE/bench/SUITE-DIR-NAME
  std::optional<double> wall_time_s;  ///< start no new problem after this (one is benched)
  int rounds = 3;                     ///< interleaved side-by-side rounds (and the search's)
  bool baselines_always = false;      ///< time PyTorch for unserved problems too
  bool keep_accuracy = false;         ///< search no knob value that trades accuracy
  std::string command;                ///< the invocation, as the report records it
  GuardFlags guard;
};

/// What a bench tells its caller as it goes: its narrative goes to `log`, a search's progress
/// to the sink `progress` makes, and each benched problem to `problem_done`.
struct BenchOutput {
  std::ostream& log;
  std::function<std::unique_ptr<ProgressSink>()> progress;
  std::function<void(const BenchProblem&)> problem_done;
};

struct BenchOutcome {
  BenchReport report;
  std::filesystem::path out;  ///< the directory holding bench.json and bench.md
};

/// Benches the suite, writing bench.json and bench.md after every problem. InputError for an
/// unusable suite, rounds below 1, or a resume of a report benched with other settings; a
/// problem's own failure is its row.
BenchOutcome run_bench_session(const BenchOptions& options, const BenchOutput& output);

}  // namespace kernelarc
