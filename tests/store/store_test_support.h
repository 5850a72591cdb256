// Shared fixtures of the store tests: a run and candidates with plausible contents.
#pragma once

#include <cstdint>
#include <string>

#include "store/database.h"

namespace kernelarc::testing {

inline NewRun sample_run(int64_t budget_total = 10) {
  NewRun run;
  run.problem_name = "rmsnorm_h4096";
  run.problem_hash = "0123456789abcdef0123456789abcdef";
  run.device = "cpu";
  run.seed = 0xfedcba9876543210ull;  // above INT64_MAX: must survive the signed column
  run.config = {{"policy", "islands"}, {"agents", {"explorer", "refiner"}}};
  run.budget_total = budget_total;
  return run;
}

inline NewCandidate sample_candidate(const std::string& agent, const std::string& solution_key) {
  NewCandidate candidate;
  candidate.agent = agent;
  candidate.solution_key = solution_key;
  candidate.template_name = "rownorm";
  candidate.knob_point = {{"block", 256}, {"vector_bytes", 16}};
  return candidate;
}

/// Two candidates of one run and one of another: what per-run queries must keep apart.
struct TwoRuns {
  int64_t run = 0, other_run = 0;
  int64_t first = 0, second = 0, elsewhere = 0;
};

inline TwoRuns two_runs(Database& db) {
  TwoRuns runs;
  runs.run = db.create_run(sample_run());
  runs.other_run = db.create_run(sample_run());
  runs.first = db.add_candidate(runs.run, sample_candidate("explore", "key"));
  runs.second = db.add_candidate(runs.run, sample_candidate("explore", "key"));
  runs.elsewhere = db.add_candidate(runs.other_run, sample_candidate("explore", "key"));
  return runs;
}

inline Evaluation passed_evaluation(const std::string& traces_key, double median_ms) {
  Evaluation evaluation;
  evaluation.status = "PASSED";
  evaluation.traces_key = traces_key;
  evaluation.median_ms = median_ms;
  evaluation.ci_low_ms = median_ms * 0.9;
  evaluation.ci_high_ms = median_ms * 1.1;
  evaluation.sol_score = 0.5;
  return evaluation;
}

}  // namespace kernelarc::testing
