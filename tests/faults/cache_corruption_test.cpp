// Faults in the workspace's caches, met by `kernelarc eval`: corrupt oracle entries (a truncated
// expected file, an inputs file full of garbage), a corrupt calibration and a truncated cached
// build. Each is either repaired (regenerated, rebuilt) or reported with the file's name; none
// crashes, and none passes on wrong data.
#include <gtest/gtest.h>

#include <set>

#include <nlohmann/json.hpp>

#include "fault_test_support.h"

namespace kernelarc::faults {
namespace {

class CacheCorruption : public FaultTest {
 protected:
  void SetUp() override {
    FaultTest::SetUp();
    seed_oracle(workspace());
  }

  /// `kernelarc eval` of the naive RMSNorm on one small workload, its traces in traces.json.
  Outcome eval(const std::string& name) {
    fs::remove(dir_ / "traces.json");
    return run_kernelarc(
        {"eval", (kSource / "problems/cpu/rmsnorm_f32").string(),
         (kSource / "problems/cpu/rmsnorm_f32/solutions/naive").string(), "--workspace",
         workspace().string(), "--workloads", "9f5092c6", "--trials", "1", "--warmup", "1",
         "--iterations", "3", "--no-baseline", "--json", (dir_ / "traces.json").string()},
        log(name));
  }

  /// The statuses of the last eval's traces.
  std::vector<std::string> statuses() {
    std::vector<std::string> result;
    if (!fs::exists(dir_ / "traces.json")) return result;
    for (const auto& trace : nlohmann::json::parse(read_text(dir_ / "traces.json")))
      result.push_back(trace["evaluation"]["status"].get<std::string>());
    return result;
  }

  /// The files under `folder` whose names end with `suffix`.
  std::vector<fs::path> files(const fs::path& folder, const std::string& suffix) {
    std::vector<fs::path> found;
    for (const auto& entry : fs::recursive_directory_iterator(folder)) {
      const std::string name = entry.path().filename().string();
      if (entry.is_regular_file() && name.size() >= suffix.size() &&
          name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
        found.push_back(entry.path());
    }
    return found;
  }

  fs::path workspace() const { return dir_ / "ws"; }
};

const std::vector<std::string> kPassed{"PASSED"};

TEST_F(CacheCorruption, CorruptOracleEntriesAreRegeneratedOrNamedNeverTrusted) {
  ASSERT_EQ(eval("first").exit_code, 0);
  const auto expected = files(workspace() / "oracle", ".expected.safetensors");
  const auto inputs = files(workspace() / "oracle", ".inputs.safetensors");
  ASSERT_FALSE(expected.empty());
  ASSERT_FALSE(inputs.empty());
  std::map<fs::path, std::string> originals;
  std::map<fs::path, std::string> corrupted;
  for (const auto& path : expected) {
    originals[path] = read_text(path);
    corrupted[path] = originals[path].substr(0, originals[path].size() / 2);
  }
  for (const auto& path : inputs) {
    originals[path] = read_text(path);
    corrupted[path] = std::string(originals[path].size(), '\x5a');
  }
  for (const auto& [path, content] : corrupted) write_text(path, content);

  // Each run meets at most one corrupt entry: it names the file, deletes the entry and stops
  // (exit 2); a later run regenerates it. The entries one evaluation reads (the trial, the
  // warm-up and every timed call's draw, and the twin: inputs and expected) are all repaired
  // after as many runs, at most one per corrupted file.
  std::set<std::string> named;
  Outcome outcome;
  for (std::size_t attempt = 0; attempt <= corrupted.size(); ++attempt) {
    outcome = eval("attempt" + std::to_string(attempt));
    EXPECT_EQ(outcome.signal, 0) << outcome.output;
    if (outcome.exit_code == 0) break;
    ASSERT_EQ(outcome.exit_code, 2) << outcome.output;
    const std::string prefix = "corrupt oracle cache file ";
    const std::size_t at = outcome.output.find(prefix);
    ASSERT_NE(at, std::string::npos) << outcome.output;
    const std::string file = outcome.output.substr(
        at + prefix.size(), outcome.output.find(' ', at + prefix.size()) - at - prefix.size());
    EXPECT_TRUE(corrupted.contains(file)) << file;
    EXPECT_TRUE(named.insert(file).second) << file << " was named twice";
  }
  ASSERT_EQ(outcome.exit_code, 0) << outcome.output;
  EXPECT_EQ(statuses(), kPassed) << outcome.output;
  EXPECT_FALSE(named.empty());
  // The entries read were regenerated: the same seeded draws, byte for byte. (Those of the
  // workloads not evaluated are still corrupt, and still untrusted the day they are read.)
  int regenerated = 0;
  for (const auto& [path, content] : originals) {
    if (!fs::exists(path) || read_text(path) == corrupted[path]) continue;
    EXPECT_EQ(read_text(path), content) << path;
    ++regenerated;
  }
  EXPECT_GE(regenerated, 2);
}

TEST_F(CacheCorruption, CorruptCalibrationIsNamed) {
  const fs::path calibration = workspace() / "calibration/cpu.json";
  write_text(calibration, "{\"device\": \"cpu\", \"copy_bandwidth");
  const Outcome bad_json = eval("bad_json");
  EXPECT_EQ(bad_json.exit_code, 2) << bad_json.output;
  EXPECT_NE(bad_json.output.find(calibration.string() + ": invalid JSON"), std::string::npos)
      << bad_json.output;

  write_text(calibration, "{\"device\": \"cpu\"}");
  const Outcome missing = eval("missing");
  EXPECT_EQ(missing.exit_code, 2) << missing.output;
  EXPECT_NE(missing.output.find(calibration.string() + ": "), std::string::npos) << missing.output;
  EXPECT_NE(missing.output.find("missing required field"), std::string::npos) << missing.output;
}

TEST_F(CacheCorruption, TruncatedCachedBuildIsRebuilt) {
  ASSERT_EQ(eval("first").exit_code, 0);
  const auto libraries = files(workspace() / "build", "lib.so");
  ASSERT_EQ(libraries.size(), 1u);
  fs::resize_file(libraries.front(), 64);

  const Outcome faulted = eval("faulted");
  EXPECT_EQ(faulted.signal, 0) << faulted.output;
  EXPECT_EQ(faulted.output.find("internal error"), std::string::npos) << faulted.output;
  ASSERT_EQ(faulted.exit_code, 0) << faulted.output;
  EXPECT_EQ(statuses(), kPassed) << faulted.output;
  EXPECT_GT(fs::file_size(libraries.front()), 64u) << "passed on a broken library";
}

}  // namespace
}  // namespace kernelarc::faults
