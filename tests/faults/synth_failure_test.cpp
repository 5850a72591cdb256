// Fault: the code synthesizer beside the templates is broken: an LLM endpoint on a closed port,
// a synthesizer command that does not exist, one that exits 1, one that hangs past
// --synth-timeout. The run lives on the templates, finishes with a winner, and records and
// prints what failed. A command synthesizer alone that never answers ends the run cleanly.
// (tests/cli/optimize_llm_test.cpp covers `--synth llm` alone against a dead server.)
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "fault_test_support.h"
#include "local_port.h"

namespace kernelarc::faults {
namespace {

class BrokenSynthesizer : public FaultTest {
 protected:
  Outcome optimize(const std::string& synth, std::vector<std::string> flags, int budget) {
    std::vector<std::string> arguments{
        "optimize",       (kSource / "problems/cpu/rmsnorm_f32").string(),
        "--synth",        synth,
        "--budget",       std::to_string(budget),
        "--seed",         "5",
        "--code-share",   "0.5",
        "--agents",       "1",
        "--workspace",    (dir_ / "ws").string(),
        "--workloads",    "9f5092c6",
        "--trials",       "1",
        "--warmup",       "1",
        "--iterations",   "3",
        "--final-top",    "1",
        "--final-rounds", "1",
        "--no-baseline",  "--no-skills",
        "--plain"};
    arguments.insert(arguments.end(), flags.begin(), flags.end());
    seed_oracle(dir_ / "ws");
    return run_kernelarc(arguments, log("optimize"));
  }

  /// The failures of the run's code requests, in order.
  std::vector<std::string> synthesis_failures() {
    Workspace store(dir_ / "ws");
    std::vector<std::string> failures;
    const auto run = store.database().list_runs().front();
    for (const auto& candidate : store.database().candidates_of(run.id))
      if (const auto synthesis = store.database().synthesis_of(candidate.id))
        failures.push_back(synthesis->failure);
    return failures;
  }

  /// The run finished on a template winner, every code request failed with `reason`, and the
  /// output says so with `printed` (the reason's start, as the progress line shows it).
  void expect_survived_on_templates(const Outcome& outcome, const std::string& reason,
                                    const std::string& printed) {
    ASSERT_EQ(outcome.exit_code, 0) << outcome.output;
    EXPECT_NE(outcome.output.find("winner: candidate"), std::string::npos) << outcome.output;
    const auto summary = nlohmann::json::parse(read_text(winner_summary()));
    EXPECT_FALSE(summary["finalists"].empty()) << outcome.output;
    const auto failures = synthesis_failures();
    ASSERT_FALSE(failures.empty()) << "no code was asked for:\n" << outcome.output;
    for (const auto& failure : failures)
      EXPECT_NE(failure.find(reason), std::string::npos) << failure;
    const std::string totals = "code: " + std::to_string(failures.size()) + " asked (0 cached, " +
                               std::to_string(failures.size()) + " without a program)";
    EXPECT_NE(outcome.output.find(totals), std::string::npos) << outcome.output;
    EXPECT_NE(outcome.output.find("SYNTHESIS_FAILED " + printed), std::string::npos)
        << "the output does not say what failed:\n"
        << outcome.output;
  }

  fs::path winner_summary() {
    Workspace store(dir_ / "ws");
    return dir_ / "ws/runs" / std::to_string(store.database().list_runs().front().id) /
           "summary.json";
  }
};

TEST_F(BrokenSynthesizer, UnreachableLlmLeavesTheTemplates) {
  const std::string endpoint =
      "http://127.0.0.1:" + std::to_string(kernelarc::test_support::free_local_port()) + "/v1";
  const nlohmann::json config = {{"models",
                                  {{{"provider", "openai"},
                                    {"endpoint", endpoint},
                                    {"model", "nobody-home"},
                                    {"retries", 0},
                                    {"timeout_s", 2.0}}}}};
  write_text(dir_ / "llm.json", config.dump());
  const Outcome outcome =
      optimize("template+llm", {"--llm-config", (dir_ / "llm.json").string()}, 6);
  expect_survived_on_templates(outcome, "onnect",
                               "gave up after 1 attempt: cannot reach " + endpoint);
}

TEST_F(BrokenSynthesizer, MissingCommandLeavesTheTemplates) {
  const Outcome outcome =
      optimize("template+command", {"--synth-command", "/nonexistent/kernelarc-synth"}, 6);
  expect_survived_on_templates(outcome, "/nonexistent/kernelarc-synth",
                               "command synthesizer /bin/sh exited with status 127");
}

TEST_F(BrokenSynthesizer, FailingCommandLeavesTheTemplates) {
  const Outcome outcome =
      optimize("template+command", {"--synth-command", "echo 'no GPU budget left' >&2; exit 1"}, 6);
  expect_survived_on_templates(outcome, "no GPU budget left",
                               "command synthesizer /bin/sh exited with status 1");
  for (const auto& failure : synthesis_failures())
    EXPECT_NE(failure.find("exited with status 1"), std::string::npos) << failure;
}

TEST_F(BrokenSynthesizer, HangingCommandIsCutAtTheTimeoutAndLeavesTheTemplates) {
  const Outcome outcome =
      optimize("template+command", {"--synth-command", "sleep 60", "--synth-timeout", "1"}, 6);
  expect_survived_on_templates(outcome, "gave no answer within 1 s",
                               "command synthesizer /bin/sh gave no answer within 1 s");
}

TEST_F(BrokenSynthesizer, ABrokenCommandAloneEndsTheRunCleanly) {
  const Outcome outcome =
      optimize("command", {"--synth-command", "/nonexistent/kernelarc-synth"}, 3);
  EXPECT_EQ(outcome.signal, 0) << outcome.output;
  EXPECT_EQ(outcome.exit_code, 1) << outcome.output;
  EXPECT_NE(outcome.output.find("no candidate passed"), std::string::npos) << outcome.output;
  const auto failures = synthesis_failures();
  EXPECT_EQ(failures.size(), 3u) << outcome.output;
  for (const auto& failure : failures)
    EXPECT_NE(failure.find("/nonexistent/kernelarc-synth"), std::string::npos) << failure;
}

}  // namespace
}  // namespace kernelarc::faults
