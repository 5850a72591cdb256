#include "oracle/draw_progress.h"

#include <fmt/format.h>

#include "core/expr.h"
#include "core/text.h"

namespace kernelarc {

DrawProgress::DrawProgress(const Problem& problem, std::string kind, ProgressLines out)
    : problem_(problem), kind_(std::move(kind)), out_(std::move(out)) {}

void DrawProgress::add(const std::string& id, const Workload& workload) {
  workload_of_job_[id] = workload.uuid;
  Draws& draws = draws_[workload.uuid];
  draws.workload = &workload;
  ++draws.jobs;
}

std::string DrawProgress::counted(int jobs) const {
  return fmt::format("{} {}{}", jobs, kind_, jobs == 1 ? "" : "s");
}

void DrawProgress::started(const std::string& id) {
  const auto workload = workload_of_job_.find(id);
  if (!out_ || workload == workload_of_job_.end()) return;
  Draws& draws = draws_.at(workload->second);
  if (draws.started) return;
  draws.started = true;
  draws.start = std::chrono::steady_clock::now();
  const AxisValues axes = resolve_axes(problem_.definition, *draws.workload);
  out_(fmt::format("reference: workload {} ({}; {} of inputs and outputs): {}...",
                   draws.workload->uuid, format_axes(axes),
                   byte_size_text(tensor_bytes(problem_.definition, axes)), counted(draws.jobs)));
}

void DrawProgress::ended(const std::string& id, bool ok) {
  const auto workload = workload_of_job_.find(id);
  if (!out_ || workload == workload_of_job_.end()) return;
  Draws& draws = draws_.at(workload->second);
  if (!draws.started) started(id);  // failed before the script could start it
  draws.failed += ok ? 0 : 1;
  if (++draws.ended < draws.jobs) return;
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - draws.start).count();
  out_(draws.failed == 0
           ? fmt::format("reference: workload {}: {} in {:.1f} s", draws.workload->uuid,
                         counted(draws.jobs), seconds)
           : fmt::format("reference: workload {}: {} of {} failed, {:.1f} s", draws.workload->uuid,
                         draws.failed, counted(draws.jobs), seconds));
}

}  // namespace kernelarc
