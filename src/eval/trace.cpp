#include "eval/trace.h"

#include "core/json_fields.h"
#include "eval/speed_of_light.h"

namespace kernelarc {

std::optional<double> Trace::baseline_ms() const {
  return faster_baseline_ms(eager_ms, compiled_ms);
}

std::optional<double> Trace::sol_score() const {
  if (!latency_ms || status != EvalStatus::Passed) return std::nullopt;
  return kernelarc::sol_score(latency_ms->median, eager_ms, compiled_ms, sol_ms);
}

bool Trace::sol_bound_beaten() const {
  return status == EvalStatus::Passed && latency_ms &&
         kernelarc::sol_bound_beaten(latency_ms->median, sol_ms);
}

namespace {

OrderedJson summary_to_json(const TimingSummary& summary) {
  return {{"samples", summary.samples},   {"median", summary.median}, {"ci95_low", summary.ci_low},
          {"ci95_high", summary.ci_high}, {"p10", summary.p10},       {"p90", summary.p90},
          {"min", summary.min},           {"max", summary.max},       {"mean", summary.mean}};
}

}  // namespace

OrderedJson trace_to_json(const Trace& trace) {
  OrderedJson evaluation;
  evaluation["status"] = status_name(trace.status);
  evaluation["log"] = trace.log;
  if (trace.correctness) {
    evaluation["correctness"] = {{"max_relative_error", trace.correctness->max_relative_error},
                                 {"max_absolute_error", trace.correctness->max_absolute_error},
                                 {"has_nan", trace.correctness->has_nan},
                                 {"has_inf", trace.correctness->has_inf}};
  } else {
    evaluation["correctness"] = nullptr;
  }
  if (trace.status == EvalStatus::Passed && trace.latency_ms) {
    const auto reference = trace.eager_ms;
    evaluation["performance"] = {
        {"latency_ms", trace.latency_ms->median},
        {"reference_latency_ms", optional_number(reference)},
        {"speedup_factor",
         reference ? OrderedJson(*reference / trace.latency_ms->median) : OrderedJson(nullptr)}};
  } else {
    evaluation["performance"] = nullptr;
  }
  evaluation["environment"] = trace.environment;
  evaluation["timestamp"] = trace.timestamp;

  OrderedJson ours;
  ours["trials"] = trace.trials;
  ours["trials_passed"] = trace.trials_passed;
  ours["audit_passed"] = trace.audit_passed;
  ours["matched_ratio"] =
      trace.correctness ? OrderedJson(trace.correctness->matched_ratio) : OrderedJson(nullptr);
  ours["clock"] = trace.clock;
  ours["latency_ms"] = trace.latency_ms ? summary_to_json(*trace.latency_ms) : OrderedJson(nullptr);
  ours["samples_ms"] = trace.samples_ms;
  ours["baselines"] = {{"eager_ms", optional_number(trace.eager_ms)},
                       {"compiled_ms", optional_number(trace.compiled_ms)},
                       {"note", trace.baseline_note}};
  ours["sol"] = {{"t_sol_ms", optional_number(trace.sol_ms)},
                 {"score", optional_number(trace.sol_score())},
                 {"bound_beaten", trace.sol_bound_beaten()},
                 {"note", trace.sol_note}};
  ours["extra"] = trace.extra;

  OrderedJson json;
  json["definition"] = trace.definition;
  json["solution"] = trace.solution;
  json["workload"] = trace.workload;
  json["evaluation"] = std::move(evaluation);
  json["kernelarc"] = std::move(ours);
  return json;
}

}  // namespace kernelarc
