#include "app/finals_table.h"

#include <fmt/format.h>

#include "app/table.h"

namespace kernelarc {

void print_finals(const OptimizeSummary& summary, std::ostream& out) {
  TextTable finals({"rank", "candidate", "agent", "solution", "speedup", "geomean_ms"});
  if (summary.baseline)
    finals.add_row({"-", std::to_string(summary.baseline->candidate_id), "baseline",
                    summary.baseline->label, "1.00x",
                    fmt::format("{:.4f}", geometric_mean_ms(summary.baseline->measurement))});
  for (std::size_t i = 0; i < summary.finalists.size(); ++i) {
    const Finalist& finalist = summary.finalists[i];
    finals.add_row({std::to_string(i + 1), std::to_string(finalist.candidate_id), finalist.agent,
                    finalist.label,
                    summary.baseline ? fmt::format("{:.2f}x", finalist.fitness) : "-",
                    fmt::format("{:.4f}", geometric_mean_ms(finalist.measurement))});
  }
  out << (summary.baseline
              ? "re-measured side by side, interleaved (speedup over the baseline: geometric "
                "mean over workloads):\n"
              : "re-measured side by side, interleaved (no baseline passed to compare against: "
                "no speedup; ranked by the geometric mean of their times):\n");
  finals.print(out);
}

}  // namespace kernelarc
