// A stop request (the flag cli/interrupt.h sets on SIGINT) ends the PyTorch reference's draw
// under way: the oracle throws Interrupted at once instead of waiting out the draw, caches
// nothing of the draw it cut (no error, no half entry), keeps what it drew before, and a later
// prepare without the flag draws the rest.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <fstream>
#include <thread>

#include "oracle/oracle.h"
#include "oracle_test_support.h"

namespace kernelarc {
namespace {

using namespace oracle_testing;

// Far longer than a stopped draw takes; an oracle that ignored the flag would wait the sleep
// out, or kill the draw after its job timeout (kJobTimeout) and record it as failed.
constexpr int kSleepSeconds = 600;
constexpr std::chrono::seconds kJobTimeout{120};

/// py_scale's operation under another name, whose reference sleeps kSleepSeconds on the large
/// workload while `hold` exists.
Problem sleeping_problem(const std::filesystem::path& dir, const std::filesystem::path& hold) {
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "workload.jsonl")
      << R"({"uuid": "small", "axes": {"rows": 2}, "inputs": {"x": {"type": "random"}, )"
         R"("rms_norm_weight": {"type": "random"}, "alpha": {"type": "scalar", "value": 0.5}}})"
      << "\n"
      << R"({"uuid": "large", "axes": {"rows": 6}, "inputs": {"x": {"type": "random"}, )"
         R"("rms_norm_weight": {"type": "random"}, "alpha": {"type": "scalar", "value": 2.0}}})"
      << "\n";
  OrderedJson definition =
      OrderedJson::parse(std::ifstream(fixture("py_scale") / "definition.json"));
  definition["name"] = "oracle_sleeping_scale";
  definition["reference"] =
      "import os\nimport time\n\nimport torch\n\nHOLD = " + OrderedJson(hold.string()).dump() +
      "\n\n\ndef run(x, rms_norm_weight, alpha):\n"
      "    if x.shape[0] == 6 and os.path.exists(HOLD):\n"
      "        time.sleep(" +
      std::to_string(kSleepSeconds) +
      ")\n"
      "    return x * rms_norm_weight * alpha\n";
  std::ofstream(dir / "definition.json") << definition.dump(2);
  return load_problem(dir);
}

TEST(OracleStop, AStopRequestEndsTheDrawUnderWayAndALaterPrepareDrawsIt) {
  TempDir temp;
  const auto hold = temp.path() / "hold";
  std::ofstream(hold) << "sleep\n";
  const Problem problem = sleeping_problem(temp.path() / "problem", hold);
  OracleOptions options;
  options.cache_dir = temp.path() / "oracle";
  options.job_timeout = kJobTimeout;
  Oracle oracle(options);
  std::atomic<int> stop{0};
  oracle.stop_on(&stop);
  // The large workload's draw is under way once its line comes (the script started its job).
  std::atomic<bool> large_started{false};
  oracle.report_progress([&](const std::string& line) {
    if (line.rfind("reference: workload large (", 0) == 0) large_started = true;
  });
  std::thread signal_handler([&] {
    const auto give_up = std::chrono::steady_clock::now() + kJobTimeout;
    while (!large_started && std::chrono::steady_clock::now() < give_up)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    stop.store(SIGINT);
  });
  const auto started = std::chrono::steady_clock::now();
  try {
    oracle.prepare(problem, 1);
    ADD_FAILURE() << "prepare ended without Interrupted";
  } catch (const Interrupted& interrupted) {
    EXPECT_EQ(interrupted.signal(), SIGINT);
  }
  const auto took = std::chrono::steady_clock::now() - started;
  signal_handler.join();
  EXPECT_TRUE(large_started);
  // Not a timing: a draw left to run would have taken the whole sleep, or the job timeout.
  EXPECT_LT(took, kJobTimeout / 2);

  // The draw before the cut is cached; the cut one is neither an entry nor the reference's
  // failure, and no interpreter starts while the flag stands.
  const auto dir = temp.path() / "oracle" / problem.definition.name;
  EXPECT_EQ(files_ending(dir, ".expected.safetensors").size(), 1u);
  EXPECT_TRUE(files_ending(dir, ".error.json").empty());
  const Workload& large = workload_named(problem, "large");
  EXPECT_FALSE(oracle.reference_error(problem, large).has_value());
  const int runs = oracle.python_runs();
  EXPECT_THROW(oracle.prepare(problem, 1), Interrupted);
  EXPECT_EQ(oracle.python_runs(), runs);

  // Unhooked, the oracle draws what the stop cut short.
  std::filesystem::remove(hold);
  oracle.stop_on(nullptr);
  oracle.prepare(problem, 1);
  EXPECT_FALSE(oracle.reference_error(problem, large).has_value());
  EXPECT_TRUE(oracle.has_twin(problem, large));
  const TensorMap inputs = oracle.inputs(problem, large, 0)->copy();
  const std::vector<double> x = values(inputs.at("x"));
  const std::vector<double> weight = values(inputs.at("rms_norm_weight"));
  const std::vector<double> out = values(oracle.expected(problem, large, 0)->at("out"));
  ASSERT_EQ(out.size(), x.size());
  for (std::size_t i = 0; i < x.size(); ++i)
    EXPECT_FLOAT_EQ(static_cast<float>(out[i]),
                    static_cast<float>(x[i]) * static_cast<float>(weight[i % 4]) * 2.0f)
        << i;
}

}  // namespace
}  // namespace kernelarc
