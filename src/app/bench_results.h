// What `kernelarc bench` reports: per workload the speed-of-light bound, the PyTorch baselines,
// cuBLASLt's default choice (GEMM) and kernelarc's winner, each pooled over the interleaved
// rounds; the speedups and SOL scores derived from them; per problem a geometric mean; for the
// suite KernelBench's fast_p and the won/lost counts. Written as bench.json (read back by
// --resume) and bench.md, and printed as text tables.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "core/json_fields.h"
#include "eval/stats.h"
#include "optimize/measurement.h"

namespace kernelarc {

/// One measured contender at one workload: its pooled time, or why it has none.
struct Contender {
  std::optional<MedianInterval> time;
  std::string note;  ///< how it was measured, or why not
};

struct BenchWorkload {
  std::string uuid;
  std::string axes;
  std::optional<double> sol_ms;
  std::string sol_note;
  Contender eager;
  Contender compiled;
  Contender cublaslt;  ///< GEMM problems only
  Contender kernelarc;
  /// The guard's diagnosis of kernelarc's winner in the last round (bottleneck class and the
  /// numbers behind it); empty without a passing winner.
  std::string diagnosis;

  /// The faster of eager and compiled (T_b): "eager", "compiled" or "" when neither ran.
  std::string faster_baseline() const;
  const MedianInterval* faster_baseline_time() const;
  /// Faster baseline / kernelarc; the interval from the ends of both intervals.
  std::optional<Speedup> speedup() const;
  std::optional<Speedup> speedup_over_cublaslt() const;
  /// eval/speed_of_light.h's S = 1 / (1 + (T_k - T_SOL) / (T_b - T_SOL)) at the medians, capped
  /// at 1.
  std::optional<double> sol_score() const;
  /// kernelarc's median below T_SOL: the bound is wrong (eval/speed_of_light.h).
  bool sol_bound_beaten() const;
};

/// "won": the whole interval of kernelarc's geometric-mean speedup over the faster baseline lies
/// above 1; "lost": below 1; "tied": it contains 1, so the measurements cannot tell them apart;
/// "no template": a family is known but no template of the device serves it; "not served": no
/// family is annotated, matched or lowered (the baselines of both are measured only with
/// --baselines-always); "failed": the problem cannot be read, kernelarc has
/// no passing solution, or no baseline ran.
enum class BenchStatus { Won, Tied, Lost, NoTemplate, NotServed, Failed };
std::string_view bench_status_name(BenchStatus status);

struct BenchProblem {
  std::string name;  ///< the definition's
  std::string dir;
  std::string op_family;
  std::string recognition;  ///< how the family was found: "fused: fused plan of 2 kernels (...)"
  BenchStatus status = BenchStatus::Failed;
  std::string note;      ///< why it failed, or where kernelarc's solution came from
  std::string solution;  ///< kernelarc's winner in words (template and point)
  /// "KNOB=value: what is given up" for each knob value of the winner that trades accuracy the
  /// reference keeps (synth/knob.h): its speedup is then not like for like.
  std::vector<std::string> accuracy_trades;
  std::optional<int64_t> run_id;
  int64_t evaluated = 0;  ///< candidates the run evaluated
  double seconds = 0;     ///< this problem's share of the bench, search included
  /// Of which the search (or finding its stored run); the rest went to the side-by-side rounds.
  double search_seconds = 0;
  /// The machine it was benched on (the calibration's description): a report resumed on
  /// another machine would otherwise show rows of two machines under one name.
  std::string hardware;
  std::vector<BenchWorkload> workloads;

  /// Geometric mean over the workloads of the speedup over the faster baseline (every workload
  /// needs one).
  std::optional<Speedup> speedup() const;
  /// Mean over the workloads with a score.
  std::optional<double> sol_score() const;
  /// From the workloads: failed without kernelarc or baseline times everywhere, else won, tied or
  /// lost. Leaves NoTemplate and NotServed as they are.
  void settle_status();
};

struct BenchSummary {
  int problems = 0;
  int won = 0;
  int tied = 0;
  int lost = 0;
  int no_template = 0;
  int not_served = 0;
  int failed = 0;
  std::optional<double> geomean_speedup;  ///< over the problems with a speedup
  double fast_1_0 = 0;                    ///< fraction of all problems correct with speedup > 1.0
  double fast_1_2 = 0;                    ///< and > 1.2
  std::optional<double> mean_sol_score;   ///< over the problems with a score
  int sol_scored = 0;
  int trading_accuracy = 0;  ///< problems whose winner trades accuracy
};

BenchSummary summarize_bench(const std::vector<BenchProblem>& problems);

struct BenchReport {
  std::string suite;
  std::string device;
  std::string hardware;
  std::string oracle;       ///< Python and torch versions (or "native reference")
  OrderedJson environment;  ///< a trace's: compiler, driver, CUDA, clocks
  std::string started;      ///< UTC ISO-8601, the first invocation's
  std::string updated;      ///< the latest invocation's
  std::string command;      ///< the latest invocation's command line
  int64_t budget = 0;
  int rounds = 0;
  std::vector<std::string> workloads;  ///< --workloads (empty: all)
  bool keep_accuracy = false;          ///< --keep-accuracy: no winner trades accuracy
  std::vector<BenchProblem> problems;  ///< finished ones, in suite order
  std::vector<std::string> remaining;  ///< not yet benched (a --wall-time stop)
};

OrderedJson bench_to_json(const BenchReport& report);
/// What bench_to_json wrote; InputError naming `where` and the field otherwise.
BenchReport bench_from_json(const OrderedJson& json, const std::string& where);
std::string bench_markdown(const BenchReport& report);

/// The problem's table, its geometric mean and its status.
void print_bench_problem(const BenchProblem& problem, std::ostream& out);
/// The suite's table (a row per problem) and the summary lines.
void print_bench_summary(const BenchReport& report, std::ostream& out);

}  // namespace kernelarc
