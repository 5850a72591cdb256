#include "optimize/code_moves.h"

#include <fmt/format.h>

#include "diagnosis/diagnosis.h"
#include "optimize/strategy.h"

namespace kernelarc {

ConstrainedSpace code_space() {
  std::vector<std::string> roles;
  for (const Strategy& strategy : builtin_strategies())
    roles.insert(roles.end(), strategy.roles.begin(), strategy.roles.end());
  Knob revision = Knob::int_range(std::string(kRevisionKnob), 0, int64_t{1} << 30);
  revision.with_roles(std::move(roles));
  return ConstrainedSpace(KnobSpace({std::move(revision)}, {}), {});
}

SynthesisMove code_move(const Proposal& proposal, bool parent_failed) {
  if (!proposal.parent) return SynthesisMove::Draft;
  if (parent_failed) return SynthesisMove::Repair;
  if (proposal.operation == Operation::Crossover) return SynthesisMove::Crossover;
  return SynthesisMove::Improve;
}

std::string results_text(const Measurement& measurement,
                         const std::map<std::string, double>& reference,
                         const std::vector<Workload>& workloads) {
  if (!measurement.passed) return std::string(status_name(measurement.status));
  std::string text = "workload | median ms | ci95 ms | speedup over the baseline | of T_SOL\n";
  for (const Workload& workload : workloads) {
    const auto time = measurement.times.find(workload.uuid);
    if (time == measurement.times.end()) continue;
    const WorkloadTime& t = time->second;
    std::vector<std::string> axes;
    for (const auto& [axis, value] : workload.axes)
      axes.push_back(fmt::format("{}={}", axis, value));
    const auto base = reference.find(workload.uuid);
    text += fmt::format(
        "{} | {:.4f} | {:.4f}-{:.4f} | {} | {}\n", fmt::join(axes, " "), t.median_ms, t.ci_low_ms,
        t.ci_high_ms,
        base == reference.end() ? "-" : fmt::format("{:.2f}x", base->second / t.median_ms),
        t.sol_ms ? fmt::format("{:.2f}", *t.sol_ms / t.median_ms) : "-");
  }
  return text;
}

std::string diagnosis_at(const OrderedJson& traces, const std::string& uuid) {
  if (!traces.is_array()) return "";
  for (const OrderedJson& trace : traces) {
    const auto workload = trace.find("workload");
    if (workload == trace.end() || workload->value("uuid", std::string()) != uuid) continue;
    const OrderedJson* extra = nullptr;
    if (const auto ours = trace.find("kernelarc"); ours != trace.end() && ours->contains("extra"))
      extra = &ours->at("extra");
    if (!extra || !extra->is_object() || !extra->contains("diagnosis")) return "";
    return diagnosis_text(Diagnosis::from_json(extra->at("diagnosis")));
  }
  return "";
}

}  // namespace kernelarc
