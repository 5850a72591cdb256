// The orchestrator tests' stand-ins: a deterministic evaluator (times are a fixed function of
// the knob point, or of a program's sources), a progress sink that keeps what it is told, and
// the candidate sequence of a stored run.
#pragma once

#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/hash.h"
#include "eval/solution_variants.h"
#include "eval/stats.h"
#include "optimize/orchestrator.h"

namespace kernelarc::testing {

inline const std::filesystem::path kProblem =
    std::filesystem::path(KERNELARC_SOURCE_DIR) / "problems/cpu/rmsnorm_f32";

/// Each knob value adds a fixed cost in [0, 0.5) ms (from a hash of "name=value"), so single
/// knob changes matter and the landscape has a known best; one point in 16 fails its check.
class LandscapeEvaluator : public CandidateEvaluator {
 public:
  explicit LandscapeEvaluator(const Problem& problem) : problem_(problem) {}

  std::vector<Trace> evaluate(const Solution& solution) override {
    if (crash_after_ && calls_ == *crash_after_) throw std::runtime_error("simulated crash");
    ++calls_;
    evaluated_.insert(fingerprint(solution));
    double ms = baseline_ms_;
    bool fails = false;
    if (solution.ext.contains("synthesized")) {
      // A program: its time from its sources; one that says WRONG computes a wrong answer.
      std::string code;
      for (const SourceFile& source : solution.sources) code += source.content;
      ms = 1 +
           static_cast<double>(std::stoul(content_hash(code).substr(0, 4), nullptr, 16)) / 65536.0;
      fails = code.find("WRONG") != std::string::npos;
    } else if (solution.ext.contains("knobs")) {
      fails = point_time(solution, "").second;
    }
    std::vector<Trace> traces;
    for (const Workload& workload : problem_.workloads) {
      Trace trace;
      trace.workload = workload.raw;
      if (solution.ext.contains("knobs") && !solution.ext.contains("synthesized")) {
        // A dispatching solution runs, at each workload, the knobs its variants select there.
        const Solution runs = solution_for_workload(solution, problem_.definition, workload);
        std::tie(ms, fails) = point_time(runs, shape_dependent_ ? workload.uuid : "");
      }
      if (fails) {
        trace.status = EvalStatus::IncorrectNumerical;
        trace.log = "landscape: this point is wrong";
      } else {
        trace.samples_ms = {ms * 0.999, ms, ms * 1.001};
        trace.latency_ms = summarize(trace.samples_ms);
        if (!bottleneck_.empty())
          trace.extra["diagnosis"] = {{"bottleneck", bottleneck_}, {"suggestions", suggestions_}};
      }
      traces.push_back(std::move(trace));
    }
    return traces;
  }
  std::vector<Trace> evaluate_final(const Solution& solution) override {
    ++final_calls_;
    return evaluate(solution);
  }
  std::string device_name() const override { return "landscape"; }
  void prebuild(const Solution& solution) override {
    const std::lock_guard lock(prebuilt_mutex_);
    prebuilt_.push_back(fingerprint(solution));
  }

  /// What identifies a solution's code: its knobs and sources.
  static std::string fingerprint(const Solution& solution) {
    std::string text = solution.ext.dump();
    for (const SourceFile& source : solution.sources) text += source.path + source.content;
    return text;
  }

  int calls_ = 0;
  std::mutex prebuilt_mutex_;
  std::vector<std::string> prebuilt_;  ///< what prebuild() was given, in order
  std::set<std::string> evaluated_;    ///< what evaluate() was given
  int final_calls_ = 0;                ///< of them, through the full guard
  /// When set, a knob value's cost also depends on the workload, so each shape has its own best
  /// point (whether a point fails does not).
  bool shape_dependent_ = false;
  std::optional<int> crash_after_;
  double baseline_ms_ = 10;  ///< what a solution without knobs (the baseline) takes
  std::string bottleneck_;   ///< the diagnosis of every passed trace ("" for none)
  OrderedJson suggestions_ = OrderedJson::array();  ///< and its knob suggestions

 private:
  /// A single-point solution's time and whether it fails; `salt` varies the costs by shape.
  static std::pair<double, bool> point_time(const Solution& solution, const std::string& salt) {
    double ms = 1;
    std::string point;
    for (const auto& [name, value] : solution.ext["knobs"].items()) {
      const std::string entry = name + "=" + value.dump();
      point += entry + ",";
      ms += 0.5 *
            static_cast<double>(std::stoul(content_hash(entry + salt).substr(0, 4), nullptr, 16)) /
            65536.0;
    }
    return {ms, std::stoul(content_hash(point).substr(0, 2), nullptr, 16) % 16 == 0};
  }

  const Problem& problem_;
};

class SilentProgress : public ProgressSink {
 public:
  void candidate(const ProgressView&, const CandidateEvent& event) override {
    events.push_back(event);
  }
  void message(const std::string& line) override { messages.push_back(line); }
  std::vector<CandidateEvent> events;
  std::vector<std::string> messages;
};

struct Proposed {
  std::string agent;
  std::string template_name;
  std::string point;
  bool operator==(const Proposed&) const = default;
};

inline std::vector<Proposed> sequence(Database& db, int64_t run_id) {
  std::vector<Proposed> proposed;
  for (const Candidate& candidate : db.candidates_of(run_id))
    proposed.push_back({candidate.agent, candidate.template_name, candidate.knob_point.dump()});
  return proposed;
}

}  // namespace kernelarc::testing
