#include "optimize/measurement.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/error.h"
#include "eval/speed_of_light.h"
#include "eval/stats.h"

namespace kernelarc {

namespace {

std::string uuid_of(const Trace& trace) {
  return trace.workload.value("uuid", std::string());
}

bool failed(const Trace& trace) {
  return trace.status != EvalStatus::Passed || !trace.latency_ms;
}

void mark_failed(Measurement& measurement, const Trace& trace) {
  measurement.passed = false;
  measurement.status = trace.status == EvalStatus::Passed ? EvalStatus::RuntimeError : trace.status;
  measurement.log = trace.status == EvalStatus::Passed ? "passed without a timing" : trace.log;
  measurement.times.clear();
}

WorkloadTime time_of(const Trace& trace, const TimingSummary& latency) {
  WorkloadTime time{median_interval(latency), trace.sol_ms, trace.eager_ms,
                    trace.compiled_ms,        {},           {}};
  if (!trace.extra.is_object() || !trace.extra.contains("diagnosis")) return time;
  const OrderedJson& diagnosis = trace.extra["diagnosis"];
  time.bottleneck = diagnosis.value("bottleneck", std::string());
  if (diagnosis.contains("suggestions"))
    time.suggestions = suggestions_from_json(diagnosis["suggestions"],
                                             "trace of " + trace.solution + ": extra.diagnosis");
  return time;
}

nlohmann::json optional_json(const std::optional<double>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

std::optional<double> optional_number(const nlohmann::json& json, const char* key) {
  if (!json.contains(key) || json[key].is_null()) return std::nullopt;
  return json[key].get<double>();
}

double geometric_mean(const std::vector<double>& values) {
  double log_sum = 0;
  for (double value : values) log_sum += std::log(value);
  return values.empty() ? 1 : std::exp(log_sum / static_cast<double>(values.size()));
}

}  // namespace

Measurement measurement_of(const std::vector<Trace>& traces) {
  Measurement measurement;
  measurement.passed = !traces.empty();
  if (traces.empty()) {
    measurement.status = EvalStatus::RuntimeError;
    measurement.log = "no workload was evaluated";
  }
  for (const Trace& trace : traces) {
    if (failed(trace)) {
      mark_failed(measurement, trace);
      return measurement;
    }
    measurement.times[uuid_of(trace)] = time_of(trace, *trace.latency_ms);
    if (!trace.extra.is_object() || !trace.extra.contains("kernels")) continue;
    for (const auto& kernel : trace.extra["kernels"]) {
      if (!kernel.contains("theoretical_occupancy")) continue;
      const double fraction = kernel["theoretical_occupancy"].value("fraction", 1.0);
      measurement.occupancy = std::min(measurement.occupancy.value_or(fraction), fraction);
    }
  }
  return measurement;
}

Measurement pooled_measurement(const std::vector<std::vector<Trace>>& rounds) {
  std::map<std::string, std::vector<double>> samples;
  std::map<std::string, const Trace*> last;
  Measurement measurement;
  measurement.passed = !rounds.empty();
  for (const auto& traces : rounds) {
    const Measurement round = measurement_of(traces);
    if (!round.passed) return round;
    measurement.occupancy = round.occupancy;
    for (const Trace& trace : traces) {
      auto& pool = samples[uuid_of(trace)];
      pool.insert(pool.end(), trace.samples_ms.begin(), trace.samples_ms.end());
      last[uuid_of(trace)] = &trace;
    }
  }
  for (const auto& [uuid, pool] : samples)
    measurement.times[uuid] = time_of(*last[uuid], summarize(pool));
  return measurement;
}

nlohmann::json measurement_to_json(const Measurement& measurement) {
  nlohmann::json times = nlohmann::json::object();
  for (const auto& [uuid, time] : measurement.times)
    times[uuid] = {{"median_ms", time.median_ms},
                   {"ci_low_ms", time.ci_low_ms},
                   {"ci_high_ms", time.ci_high_ms},
                   {"sol_ms", optional_json(time.sol_ms)},
                   {"eager_ms", optional_json(time.eager_ms)},
                   {"compiled_ms", optional_json(time.compiled_ms)},
                   {"bottleneck", time.bottleneck},
                   {"suggestions", nlohmann::json(suggestions_to_json(time.suggestions))}};
  return {{"passed", measurement.passed},
          {"status", status_name(measurement.status)},
          {"log", measurement.log},
          {"times", times},
          {"occupancy", optional_json(measurement.occupancy)}};
}

Measurement measurement_from_json(const nlohmann::json& json, const std::string& where) {
  try {
    Measurement measurement;
    measurement.passed = json.at("passed").get<bool>();
    const auto status = status_from_name(json.at("status").get<std::string>());
    if (!status) throw_input_error(where, "status", "not a status: " + json.at("status").dump());
    measurement.status = *status;
    measurement.log = json.at("log").get<std::string>();
    measurement.occupancy = optional_number(json, "occupancy");
    for (const auto& [uuid, time] : json.at("times").items())
      measurement.times[uuid] = {
          {time.at("median_ms").get<double>(), time.at("ci_low_ms").get<double>(),
           time.at("ci_high_ms").get<double>()},
          optional_number(time, "sol_ms"),
          optional_number(time, "eager_ms"),
          optional_number(time, "compiled_ms"),
          time.value("bottleneck", std::string()),
          time.contains("suggestions") ? suggestions_from_json(OrderedJson(time.at("suggestions")),
                                                               fmt::format("{}: {}", where, uuid))
                                       : std::vector<KnobSuggestion>{}};
    return measurement;
  } catch (const nlohmann::json::exception& error) {
    throw InputError(fmt::format("{}: not a stored measurement: {}", where, error.what()));
  }
}

std::vector<KnobSuggestion> suggestions_at(const Measurement& measurement,
                                           const std::string& uuid) {
  const auto time = measurement.times.find(uuid);
  return time == measurement.times.end() ? std::vector<KnobSuggestion>{} : time->second.suggestions;
}

std::map<std::string, double> reference_times(const Measurement& measurement) {
  std::map<std::string, double> reference;
  for (const auto& [uuid, time] : measurement.times) reference[uuid] = time.median_ms;
  return reference;
}

double geometric_mean_ms(const Measurement& measurement, double WorkloadTime::*field) {
  if (measurement.times.empty()) return 0;
  std::vector<double> values;
  for (const auto& [uuid, time] : measurement.times) values.push_back(time.*field);
  return geometric_mean(values);
}

bool improves_beyond_noise(double fitness, double noise, double best, double best_noise,
                           double min_gain) {
  return fitness > best * (1 + std::max({min_gain, noise, best_noise}));
}

Fitness fitness_of(const Measurement& measurement,
                   const std::map<std::string, double>& reference_ms) {
  std::vector<double> ratios;
  std::vector<double> widths;
  for (const auto& [uuid, time] : measurement.times) {
    const auto reference = reference_ms.find(uuid);
    if (reference == reference_ms.end())
      throw InputError(fmt::format("workload {} has no reference time", uuid));
    ratios.push_back(reference->second / time.median_ms);
    widths.push_back(1 + (time.ci_high_ms - time.ci_low_ms) / (2 * time.median_ms));
  }
  return {geometric_mean(ratios), geometric_mean(widths) - 1};
}

Speedup speedup_of(const Measurement& before, const Measurement& after) {
  std::vector<double> values, lows, highs;
  for (const auto& [uuid, time] : after.times) {
    const auto earlier = before.times.find(uuid);
    if (earlier == before.times.end()) continue;
    const WorkloadTime& b = earlier->second;
    values.push_back(b.median_ms / time.median_ms);
    lows.push_back(b.ci_low_ms / time.ci_high_ms);
    highs.push_back(b.ci_high_ms / time.ci_low_ms);
  }
  return {geometric_mean(values), geometric_mean(lows), geometric_mean(highs)};
}

std::optional<double> sol_fraction(const Measurement& measurement) {
  std::vector<double> fractions;
  for (const auto& [uuid, time] : measurement.times) {
    if (!time.sol_ms) return std::nullopt;
    // Below the bound is the bound's error (sol_bound_beaten), not a fraction above 1.
    fractions.push_back(std::min(1.0, *time.sol_ms / time.median_ms));
  }
  if (fractions.empty()) return std::nullopt;
  return geometric_mean(fractions);
}

bool sol_bound_beaten(const Measurement& measurement) {
  return std::any_of(measurement.times.begin(), measurement.times.end(), [](const auto& entry) {
    return sol_bound_beaten(entry.second.median_ms, entry.second.sol_ms);
  });
}

}  // namespace kernelarc
