// optimize_bench's finished rows, one JSON object per line in a file beside the runs: a
// benchmark cut short (a device call's time limit, a crash) keeps every row it finished, and run
// again with the same settings it prints those rows and runs only the missing ones.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/json_fields.h"

namespace kernelarc {

/// One run of one configuration on one problem: the winner at the largest workload.
struct BenchRow {
  std::string problem_dir;  ///< the directory's name, which identifies the problem
  std::string problem;      ///< the definition's name, for the table
  std::string configuration;
  int seed = 1;
  std::optional<double> best_ms, ci_low_ms, ci_high_ms;  ///< unset when nothing passed
  std::optional<double> speedup, speedup_low, speedup_high;
  double wall_s = 0;
  /// The winner's agent and candidate ("memory: rownorm_cuda BLOCK_THREADS=128,VEC=8"), so a gap
  /// between configurations can be traced to the points they found; "" in rows kept before it was.
  std::string winner;
  /// The agents' trees together: mean node depth (a root is 0) and the share of children that
  /// improved on their parent; unset in rows kept before they were measured.
  std::optional<double> mean_depth, improving_share;
};

class BenchRows {
 public:
  /// Reads `path` if it exists, keeping the rows whose settings equal `settings` (the device,
  /// budget, guard strength ...; rows of other settings stay in the file, unused). Throws
  /// InputError naming the file, line and field of a malformed row.
  BenchRows(std::filesystem::path path, OrderedJson settings);

  const BenchRow* find(const std::string& problem_dir, const std::string& configuration,
                       int seed) const;
  /// Appends the row to the file at once (flushed), and to the rows in memory.
  void add(const BenchRow& row);
  const std::vector<BenchRow>& rows() const { return rows_; }

 private:
  std::filesystem::path path_;
  OrderedJson settings_;
  std::vector<BenchRow> rows_;
};

/// The name of a problem directory, as rows store it ("a/b/" and "a/b" both give "b").
std::string problem_dir_name(const std::string& dir);

}  // namespace kernelarc
