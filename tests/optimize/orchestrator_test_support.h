// The orchestrator tests' stand-ins: a deterministic evaluator (times are a fixed function of
// the knob point, or of a program's sources; it crashes or is interrupted on cue), a pool over
// it that finishes evaluations in a seeded order, a progress sink that keeps what it is told,
// and the candidate sequence of a stored run.
#pragma once

#include <algorithm>
#include <csignal>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/error.h"
#include "core/hash.h"
#include "eval/solution_variants.h"
#include "eval/stats.h"
#include "optimize/evaluation_pool.h"
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
    if (interrupt_at_ && calls_ == *interrupt_at_) {
      interrupt_at_.reset();
      throw Interrupted(SIGINT);
    }
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
  void prepare() override {
    if (interrupt_prepare_) throw Interrupted(SIGINT);
  }
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
  /// When set, the evaluation after this many (0: the first) is cut short once, as a stop
  /// request cuts a reference's draw: Interrupted(SIGINT), and no call counted.
  std::optional<int> interrupt_at_;
  bool interrupt_prepare_ = false;  ///< prepare() throws Interrupted(SIGINT)
  double baseline_ms_ = 10;         ///< what a solution without knobs (the baseline) takes
  std::string bottleneck_;          ///< the diagnosis of every passed trace ("" for none)
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

/// Up to `capacity` evaluations in flight on a LandscapeEvaluator; next() finishes the oldest
/// (order_seed 0) or one picked by a generator seeded with order_seed, so results arrive out of
/// the order they were submitted in, on one thread.
class ReorderingPool : public EvaluationPool {
 public:
  ReorderingPool(LandscapeEvaluator& evaluator, std::size_t capacity, uint64_t order_seed)
      : evaluator_(evaluator), capacity_(capacity), order_seed_(order_seed), rng_(order_seed) {}

  std::size_t capacity() const override { return capacity_; }
  void submit(uint64_t ticket, const Solution& solution) override {
    if (submitted_.size() >= capacity_) throw std::logic_error("submitted beyond the capacity");
    submitted_.emplace_back(ticket, solution);
    max_in_flight_ = std::max(max_in_flight_, submitted_.size());
  }
  Done next() override {
    if (submitted_.empty()) throw std::logic_error("next() with nothing in flight");
    const std::size_t index = order_seed_ == 0 ? 0
                                               : std::uniform_int_distribution<std::size_t>(
                                                     0, submitted_.size() - 1)(rng_);
    out_of_order_ += index != 0;
    auto [ticket, solution] = submitted_[index];
    submitted_.erase(submitted_.begin() + static_cast<std::ptrdiff_t>(index));
    ++finished_[ticket];
    return {ticket, evaluator_.evaluate(solution), fmt::format("stand-in {}", index)};
  }

  std::size_t max_in_flight_ = 0;
  int out_of_order_ = 0;              ///< results that overtook an older submission
  std::map<uint64_t, int> finished_;  ///< how often each ticket finished

 private:
  LandscapeEvaluator& evaluator_;
  std::size_t capacity_;
  uint64_t order_seed_;
  std::mt19937_64 rng_;
  std::vector<std::pair<uint64_t, Solution>> submitted_;
};

/// A new run, or the stored `resume` continued, through `pool` when given, else through the
/// evaluator alone.
inline OptimizeSummary run_orchestrator(const OptimizeTarget& target, CandidateEvaluator& evaluator,
                                        EvaluationPool* pool, Workspace& workspace,
                                        const OptimizeOptions& options, ProgressSink& progress,
                                        std::optional<int64_t> resume = {}) {
  std::optional<Orchestrator> orchestrator;
  if (pool)
    orchestrator.emplace(target, evaluator, *pool, workspace, options, progress);
  else
    orchestrator.emplace(target, evaluator, workspace, options, progress);
  return resume ? orchestrator->resume(*resume) : orchestrator->run();
}

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
