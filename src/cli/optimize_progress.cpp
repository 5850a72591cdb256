#include "cli/optimize_progress.h"

#include <mutex>

#include <fmt/format.h>

#include "eval/speed_of_light.h"

namespace kernelarc {

std::string synthesis_text(const SynthesisTotals& totals) {
  return fmt::format(
      "code: {} asked ({} cached, {} without a program), {} tokens in, {} out, "
      "${:.4f} at list prices",
      totals.calls, totals.cached, totals.failures, totals.input_tokens, totals.output_tokens,
      totals.cost_usd);
}

namespace {

std::string times(const std::optional<double>& fitness) {
  return fitness ? fmt::format("{:.2f}x", *fitness) : "-";
}

std::string outcome(const CandidateEvent& event) {
  if (!event.measurement.passed)
    return fmt::format(
        "{} {}", status_name(event.measurement.status),
        event.measurement.log.substr(0, event.measurement.log.find('\n')).substr(0, 80));
  return fmt::format("PASSED {}{}", times(event.fitness), event.new_incumbent ? " new best" : "");
}

std::string best_text(const ProgressView& view) {
  std::string text = "best " + times(view.best_fitness);
  if (view.best_median_ms)
    text += fmt::format(", {:.4f} ms on the largest workload", *view.best_median_ms);
  if (view.best_largest_sol_fraction)
    text += fmt::format(" ({:.2f} of SOL)", *view.best_largest_sol_fraction);
  if (view.best_sol_fraction)
    text += fmt::format(", SOL score {:.2f} over all workloads", *view.best_sol_fraction);
  if (view.sol_bound_beaten) text += std::string("; ") + kSolBoundBeatenAdvice;
  if (view.synthesis.calls > 0) text += "; " + synthesis_text(view.synthesis);
  return text;
}

class LineProgress : public ProgressSink {
 public:
  explicit LineProgress(std::ostream& out) : out_(out) {}

  void candidate(const ProgressView& view, const CandidateEvent& event) override {
    const std::lock_guard lock(mutex_);
    const std::string cost = event.replayed
                                 ? " (stored)"
                                 : fmt::format(" [{:.1f} s build wait, {:.1f} s guard{}]",
                                               event.build_wait_seconds, event.evaluation_seconds,
                                               event.where.empty() ? "" : " on " + event.where);
    out_ << fmt::format("[{:>3}/{}] #{} {} {}: {}{}  ({})\n", view.evaluated, view.budget,
                        event.candidate_id, event.agent, event.label, outcome(event), cost,
                        best_text(view))
         << std::flush;
  }
  void message(const std::string& line) override {
    const std::lock_guard lock(mutex_);
    out_ << line << '\n' << std::flush;
  }

 private:
  std::ostream& out_;
  std::mutex mutex_;
};

class TerminalProgress : public ProgressSink {
 public:
  explicit TerminalProgress(std::ostream& out) : out_(out) {}

  void candidate(const ProgressView& view, const CandidateEvent& event) override {
    const std::lock_guard lock(mutex_);
    erase();
    last_ =
        fmt::format("#{} {} {}: {}", event.candidate_id, event.agent, event.label, outcome(event));
    if (event.new_incumbent) out_ << last_ << '\n';
    draw(view);
  }
  void message(const std::string& line) override {
    const std::lock_guard lock(mutex_);
    erase();
    out_ << line << '\n';
    if (view_) draw(*view_);
  }

 private:
  void erase() {
    if (drawn_ > 0) out_ << fmt::format("\x1b[{}F\x1b[J", drawn_);
    drawn_ = 0;
  }
  void draw(const ProgressView& view) {
    view_ = view;
    constexpr int kWidth = 40;
    const int filled =
        view.budget > 0 ? static_cast<int>(kWidth * std::min<int64_t>(view.evaluated, view.budget) /
                                           view.budget)
                        : 0;
    std::vector<std::string> lines{
        fmt::format("run {} [{}{}] {}/{}  {}", view.run_id, std::string(filled, '#'),
                    std::string(kWidth - filled, '.'), view.evaluated, view.budget,
                    best_text(view)),
        "last: " + last_};
    for (const AgentLine& agent : view.agents)
      lines.push_back(fmt::format("  {:<12} {:>3} candidates  best {:<8} {}", agent.name,
                                  agent.candidates, times(agent.best_fitness),
                                  agent.last_board.substr(0, 90)));
    for (const std::string& line : lines) out_ << line << '\n';
    out_ << std::flush;
    drawn_ = static_cast<int>(lines.size());
  }

  std::ostream& out_;
  std::optional<ProgressView> view_;
  std::string last_;
  int drawn_ = 0;
  std::mutex mutex_;
};

}  // namespace

std::unique_ptr<ProgressSink> make_progress(std::ostream& out, bool terminal) {
  if (terminal) return std::make_unique<TerminalProgress>(out);
  return std::make_unique<LineProgress>(out);
}

}  // namespace kernelarc
