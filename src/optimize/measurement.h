// What the orchestrator keeps of a guard evaluation, and the fitness and comparisons it derives:
// a candidate's time per workload with its confidence interval, a fitness that is the geometric
// mean speedup over a reference, and speedups between two candidates with intervals taken from
// the ends of the confidence intervals (so "faster" means faster beyond measured noise).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "diagnosis/diagnosis.h"
#include "eval/stats.h"
#include "eval/trace.h"

namespace kernelarc {

/// A candidate's time at one workload, and what the guard said beside it.
struct WorkloadTime : MedianInterval {
  std::optional<double> sol_ms;
  std::optional<double> eager_ms;
  std::optional<double> compiled_ms;
  /// The diagnosis' bottleneck class there ("memory", "latency", ...; "" without one).
  std::string bottleneck;
  /// The diagnosis' knob suggestions there (none without a diagnosis).
  std::vector<KnobSuggestion> suggestions;
};

struct Measurement {
  bool passed = false;
  EvalStatus status = EvalStatus::Passed;     ///< the first failing trace's status when !passed
  std::string log;                            ///< and its log
  std::map<std::string, WorkloadTime> times;  ///< by workload uuid; every workload when passed
  /// The lowest theoretical occupancy of the kernels it launched (GPU), for MAP-Elites cells.
  std::optional<double> occupancy;
};

/// The suggestions at workload `uuid`; none when it was not measured.
std::vector<KnobSuggestion> suggestions_at(const Measurement& measurement, const std::string& uuid);

/// Passed only when every trace passed with a timing.
Measurement measurement_of(const std::vector<Trace>& traces);
/// The measurement of traces pooled over several rounds (the samples of a workload from every
/// round summarized together), for the side-by-side re-measurement. Failed when any round did.
Measurement pooled_measurement(const std::vector<std::vector<Trace>>& rounds);

nlohmann::json measurement_to_json(const Measurement& measurement);
/// InputError naming `where` when the JSON is not what measurement_to_json writes.
Measurement measurement_from_json(const nlohmann::json& json, const std::string& where);

struct Fitness {
  double value = 0;  ///< geometric mean over workloads of reference_ms / median_ms
  double noise = 0;  ///< geometric mean of the relative half-widths of the intervals
};

/// The measurement's medians by workload: the reference that fitness compares against.
std::map<std::string, double> reference_times(const Measurement& measurement);

/// The geometric mean over workloads of one field of the times (the median by default); 0 for
/// a measurement without times.
double geometric_mean_ms(const Measurement& measurement,
                         double WorkloadTime::*field = &WorkloadTime::median_ms);

/// Whether `fitness` beats `best` by more than the larger relative noise of the two and
/// `min_gain`: the rule for replacing an incumbent or an agent's best.
bool improves_beyond_noise(double fitness, double noise, double best, double best_noise,
                           double min_gain);

/// InputError when a workload of the measurement has no reference time.
Fitness fitness_of(const Measurement& measurement,
                   const std::map<std::string, double>& reference_ms);

struct Speedup {
  double value = 1;  ///< geometric mean over workloads of before / after medians
  double low = 1;    ///< from before's lower and after's upper interval ends
  double high = 1;
  bool significant() const { return low > 1; }
};

/// How much faster `after` is than `before` over the workloads both measured (both passed).
Speedup speedup_of(const Measurement& before, const Measurement& after);

/// The largest T_SOL fraction summary: geometric mean of sol_ms / median_ms, each capped at 1,
/// when every workload has a T_SOL.
std::optional<double> sol_fraction(const Measurement& measurement);

/// Whether any workload ran below its T_SOL: the bound is wrong (eval/speed_of_light.h).
bool sol_bound_beaten(const Measurement& measurement);

}  // namespace kernelarc
