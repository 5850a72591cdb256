#include "eval/trace_from_json.h"

#include <limits>

#include <fmt/format.h>

#include "core/error.h"

namespace kernelarc {

namespace {

std::optional<double> number_or_nullopt(const OrderedJson& json) {
  return json.is_null() ? std::nullopt : std::optional<double>(json.get<double>());
}

// An error of NaN or infinity was written as null.
double number_or_nan(const OrderedJson& json) {
  return json.is_null() ? std::numeric_limits<double>::quiet_NaN() : json.get<double>();
}

TimingSummary summary_from_json(const OrderedJson& json) {
  TimingSummary summary;
  summary.samples = json.at("samples").get<int>();
  summary.median = json.at("median").get<double>();
  summary.ci_low = json.at("ci95_low").get<double>();
  summary.ci_high = json.at("ci95_high").get<double>();
  summary.p10 = json.at("p10").get<double>();
  summary.p90 = json.at("p90").get<double>();
  summary.min = json.at("min").get<double>();
  summary.max = json.at("max").get<double>();
  summary.mean = json.at("mean").get<double>();
  return summary;
}

CompareResult correctness_from_json(const OrderedJson& correctness, const OrderedJson& ours,
                                    EvalStatus status) {
  CompareResult result;
  result.max_relative_error = number_or_nan(correctness.at("max_relative_error"));
  result.max_absolute_error = number_or_nan(correctness.at("max_absolute_error"));
  result.has_nan = correctness.at("has_nan").get<bool>();
  result.has_inf = correctness.at("has_inf").get<bool>();
  result.matched_ratio = number_or_nan(ours.at("matched_ratio"));
  result.passed = status == EvalStatus::Passed;
  return result;
}

Trace parse_trace(const OrderedJson& json, const std::string& where) {
  Trace trace;
  trace.definition = json.at("definition").get<std::string>();
  trace.solution = json.at("solution").get<std::string>();
  trace.workload = json.at("workload");
  const OrderedJson& evaluation = json.at("evaluation");
  const std::string status = evaluation.at("status").get<std::string>();
  const auto parsed = status_from_name(status);
  if (!parsed) throw_input_error(where, "evaluation.status", "unknown status \"" + status + "\"");
  trace.status = *parsed;
  trace.log = evaluation.at("log").get<std::string>();
  trace.environment = evaluation.at("environment");
  trace.timestamp = evaluation.at("timestamp").get<std::string>();
  const OrderedJson& ours = json.at("kernelarc");
  if (const OrderedJson& correctness = evaluation.at("correctness"); !correctness.is_null())
    trace.correctness = correctness_from_json(correctness, ours, trace.status);
  trace.trials = ours.at("trials").get<int>();
  trace.trials_passed = ours.at("trials_passed").get<int>();
  trace.audit_passed = ours.at("audit_passed").get<bool>();
  trace.clock = ours.at("clock").get<std::string>();
  if (const OrderedJson& latency = ours.at("latency_ms"); !latency.is_null())
    trace.latency_ms = summary_from_json(latency);
  trace.samples_ms = ours.at("samples_ms").get<std::vector<double>>();
  const OrderedJson& baselines = ours.at("baselines");
  trace.eager_ms = number_or_nullopt(baselines.at("eager_ms"));
  trace.compiled_ms = number_or_nullopt(baselines.at("compiled_ms"));
  trace.baseline_note = baselines.at("note").get<std::string>();
  const OrderedJson& sol = ours.at("sol");
  trace.sol_ms = number_or_nullopt(sol.at("t_sol_ms"));
  trace.sol_note = sol.at("note").get<std::string>();
  trace.extra = ours.at("extra");
  return trace;
}

}  // namespace

Trace trace_from_json(const OrderedJson& json, const std::string& where) {
  try {
    return parse_trace(json, where);
  } catch (const nlohmann::json::exception& error) {
    throw InputError(fmt::format("{}: {}", where, error.what()));
  }
}

}  // namespace kernelarc
