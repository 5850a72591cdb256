// Launching Nsight Compute: a fake ncu (a shell script) stands in for the real one, so that the
// command line, the record, the red flag and every way ncu fails are checked without a GPU. The
// Gpu test profiles a bundled CUDA solution with the real ncu where both exist.
#include "diagnosis/ncu_runner.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "backend/cuda/cuda_device.h"
#include "core/json_fields.h"
#include "diagnosis/ncu_profile.h"
#include "diagnosis/ncu_source.h"
#include "eval/speed_of_light.h"
#include "source_dir.h"

namespace kernelarc {
namespace {

namespace fs = std::filesystem;

const fs::path kSample = kSource / "tests/diagnosis/data/ncu_h200_rmsnorm.txt";
const fs::path kSourceSample = kSource / "tests/diagnosis/data/ncu_source_sample.csv";

class NcuRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           fmt::format("kernelarc-ncu-test-{}-{}", getpid(),
                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  /// An executable `ncu` in the test's directory: answers --version, records its arguments in
  /// args.txt, then runs `body`.
  fs::path fake_ncu(const std::string& body) {
    const fs::path path = dir_ / "ncu";
    std::ofstream(path) << fmt::format(
        "#!/bin/sh\n"
        "if [ \"$1\" = --version ]; then echo 'NVIDIA Nsight Compute'; "
        "echo 'Version 2099.1 (fake)'; exit 0; fi\n"
        "printf '%s\\n' \"$@\" > '{}'\n{}\n",
        (dir_ / "args.txt").string(), body);
    fs::permissions(path, fs::perms::owner_all);
    return path;
  }
  std::string print_sample() const { return "cat '" + kSample.string() + "'"; }

  /// The sample's DRAM bytes, read + written, over its three launches.
  static double sample_bytes() {
    const NcuResult parsed = parse_ncu_output(read_text_file(kSample), 0);
    return parsed.profile->aggregate.dram_bytes_read + parsed.profile->aggregate.dram_bytes_write;
  }

  ProfileOptions options(const fs::path& ncu) const {
    return ProfileOptions{.ncu = ncu.string(),
                          .timeout = std::chrono::seconds(60),
                          .calls = 3,
                          .executable = KERNELARC_BINARY};
  }

  fs::path dir_;
};

TEST_F(NcuRunnerTest, RunsNcuWithItsCommandLineAndKeepsTheProfile) {
  const fs::path ncu = fake_ncu(print_sample());
  const std::vector<std::string> target{"/bin/true", "--flag", "value"};
  const OrderedJson record = profile_command(options(ncu), target, sample_bytes() / 3);

  std::vector<std::string> expected = ncu_command(ncu, "/bin/true", {"--flag", "value"});
  expected.erase(expected.begin());  // the script sees its arguments, not its own path
  EXPECT_EQ(read_text_file(dir_ / "args.txt"), fmt::format("{}\n", fmt::join(expected, "\n")));
  EXPECT_EQ(record["command"].front(), ncu.string());
  EXPECT_EQ(record.value("ncu_version", ""), "Version 2099.1 (fake)");
  ASSERT_FALSE(record.contains("unavailable")) << record.dump(2);
  EXPECT_EQ(record["aggregate"]["launches"], 3);
  EXPECT_EQ(record["kernels"].size(), 3u);
  EXPECT_EQ(record["kernels"][0]["name"], "ka_rownorm");
  EXPECT_EQ(record["calls"], 3);
  EXPECT_FALSE(record.contains("red_flag"));
  EXPECT_NE(profile_text(record).find("3 launches over 3 calls"), std::string::npos);
}

TEST_F(NcuRunnerTest, TheSourcePageIsASecondRunOverTheSameTarget) {
  // The fake prints the source page when asked for it (`--csv --page source ...`).
  const fs::path ncu = fake_ncu(fmt::format("if [ \"$3\" = source ]; then cat '{}'; else {}; fi",
                                            kSourceSample.string(), print_sample()));
  ProfileOptions with_source = options(ncu);
  with_source.source_hotspots = true;
  const OrderedJson record = profile_command(with_source, {"/bin/true", "--flag"}, 1);
  ASSERT_TRUE(record.contains("source")) << record.dump(2);
  const OrderedJson& source = record["source"];
  std::vector<std::string> expected = ncu_source_command(ncu, "/bin/true", {"--flag"});
  expected.erase(expected.begin());
  EXPECT_EQ(read_text_file(dir_ / "args.txt"), fmt::format("{}\n", fmt::join(expected, "\n")));
  ASSERT_FALSE(source.contains("unavailable")) << source.dump(2);
  EXPECT_NE(source["top"][0]["instruction"].get<std::string>().find("SYNCS.PHASECHK"),
            std::string::npos);
  EXPECT_EQ(source["opcodes"][0]["opcode"], "SYNCS");
  EXPECT_NE(profile_text(record).find("stalls by instruction"), std::string::npos);
  // Without the option there is one run and no source record.
  EXPECT_FALSE(profile_command(options(ncu), {"/bin/true"}, 1).contains("source"));
}

TEST_F(NcuRunnerTest, TooFewDramBytesRaiseTheRedFlag) {
  const fs::path ncu = fake_ncu(print_sample());
  // The problem claims to move ten times what the kernels read and wrote.
  const OrderedJson record = profile_command(options(ncu), {"/bin/true"}, 10 * sample_bytes() / 3);
  ASSERT_TRUE(record.contains("red_flag")) << record.dump(2);
  EXPECT_NE(record["red_flag"].get<std::string>().find("0.10x"), std::string::npos);
  EXPECT_NE(profile_text(record).find("RED FLAG: DRAM moved"), std::string::npos);
}

TEST_F(NcuRunnerTest, MissingNcuSaysWhereItLooked) {
  const OrderedJson record = profile_command(options(dir_ / "no-such-ncu"), {"/bin/true"}, 1);
  EXPECT_EQ(
      record["unavailable"].get<std::string>().rfind(
          "Nsight Compute not found (looked in --ncu " + (dir_ / "no-such-ncu").string() + ")", 0),
      0u)
      << record.dump();
  EXPECT_FALSE(record.contains("command"));
}

TEST_F(NcuRunnerTest, FindsNcuThroughTheEnvironment) {
  const fs::path ncu = fake_ncu("true");
  setenv("KERNELARC_NCU", ncu.c_str(), 1);
  const NcuLocation found = find_ncu("");
  unsetenv("KERNELARC_NCU");
  ASSERT_TRUE(found.path);
  EXPECT_EQ(*found.path, ncu);
  EXPECT_EQ(found.looked_in, std::vector<std::string>{"KERNELARC_NCU=" + ncu.string()});
}

TEST_F(NcuRunnerTest, RefusedCountersAreReported) {
  const fs::path ncu = fake_ncu(
      "echo '==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU "
      "Performance Counters on the target device 0.'\nexit 1");
  const OrderedJson record = profile_command(options(ncu), {"/bin/true"}, 1);
  EXPECT_NE(record.value("unavailable", "").find("ERR_NVGPUCTRPERM"), std::string::npos);
  EXPECT_FALSE(record.contains("aggregate"));
  EXPECT_NE(profile_text(record).find("the analytic diagnosis above stands"), std::string::npos);
}

TEST_F(NcuRunnerTest, AHangingNcuIsKilledAtTheTimeout) {
  const fs::path ncu = fake_ncu("exec sleep 600");
  ProfileOptions hanging = options(ncu);
  hanging.timeout = std::chrono::seconds(1);
  const OrderedJson record = profile_command(hanging, {"/bin/true"}, 1);
  EXPECT_NE(record.value("unavailable", "").find("did not finish within 1 s"), std::string::npos)
      << record.dump();
}

TEST_F(NcuRunnerTest, ProfileGoesIntoTheTraceAndItsDiagnosis) {
  const fs::path ncu = fake_ncu(print_sample());
  const OrderedJson record = profile_command(options(ncu), {"/bin/true"}, sample_bytes() / 3);
  Trace trace;
  trace.extra["diagnosis"] = {{"bottleneck", "latency"}};
  attach_profile(trace, record);
  EXPECT_EQ(trace.extra["profile"], record);
  const OrderedJson& profiled = trace.extra["diagnosis"]["profiled"];
  EXPECT_EQ(profiled["source"], "Nsight Compute");
  EXPECT_NEAR(profiled["achieved_occupancy"].get<double>(),
              record["aggregate"]["achieved_occupancy_pct"].get<double>() / 100, 1e-12);
  EXPECT_NEAR(profiled["dram_bytes_per_call"].get<double>(), sample_bytes() / 3, 1);
  // The trace's JSON carries it.
  EXPECT_NE(trace_to_json(trace).dump().find("\"aggregate\""), std::string::npos);
}

// The whole path on the CPU: the solution built as the guard builds it, trial 0's inputs in an
// arena file, and `kernelarc profile-run` really run (by the fake, as ncu would) in the sandbox.
TEST_F(NcuRunnerTest, ProfilesASolutionThroughTheProfileRun) {
  const fs::path ncu = fake_ncu(
      "while [ \"$1\" != all ]; do shift; done; shift\n"
      "log=''; prev=''; for a in \"$@\"; do [ \"$prev\" = --log ] && log=\"$a\"; prev=\"$a\"; "
      "done\n"
      "\"$@\"; echo $? > '" +
      (dir_ / "target_rc").string() +
      "'\n"
      "cp \"$log\" '" +
      (dir_ / "target_log").string() + "'\n" + print_sample());
  if (!std::getenv("KERNELARC_PYTHON")) setenv("KERNELARC_PYTHON", "/usr/bin/python3", 0);
  const fs::path problem_dir = kSource / "problems/cpu/rmsnorm_f32";
  const Problem problem = load_problem(problem_dir);
  const Solution solution = load_solution(problem_dir / "solutions/naive");
  GuardOptions settings;
  settings.workspace = dir_ / "workspace";
  Oracle oracle(OracleOptions{.cache_dir = settings.workspace / "oracle"});
  Guard guard(settings, oracle);
  const Workload& workload = problem.workloads.front();
  const OrderedJson record =
      profile_solution(problem, workload, solution, guard, oracle, options(ncu));

  EXPECT_EQ(read_text_file(dir_ / "target_rc"), "0\n") << read_text_file(dir_ / "target_log");
  const std::string log = read_text_file(dir_ / "target_log");
  EXPECT_NE(log.find("3 call(s) done"), std::string::npos) << log;
  EXPECT_NE(log.find("\"seccomp\""), std::string::npos) << log;
  EXPECT_EQ(record["workload"], workload.uuid);
  ASSERT_TRUE(record.contains("aggregate")) << record.dump(2);
  EXPECT_DOUBLE_EQ(record["required_bytes_per_call"].get<double>(),
                   problem_bytes(problem.definition, resolve_axes(problem.definition, workload)));
  const auto args = read_text_file(dir_ / "args.txt");
  EXPECT_NE(args.find("profile-run\n--device\ncpu\n"), std::string::npos) << args;
}

/// Nsight Compute's record of rmsnorm_bf16's basic solution on its largest workload (GPU only).
OrderedJson profile_rmsnorm_basic(const ProfileOptions& options) {
  const fs::path dir = fs::temp_directory_path() / fmt::format("kernelarc-gpu-ncu-{}", getpid());
  const fs::path problem_dir = kSource / "problems/cuda/rmsnorm_bf16";
  const Problem problem = load_problem(problem_dir);
  const Solution solution = load_solution(problem_dir / "solutions/basic");
  GuardOptions settings;
  settings.device = "cuda:0";
  settings.workspace = dir / "workspace";
  settings.worker_executable = KERNELARC_BINARY;
  Oracle oracle(
      OracleOptions{.cache_dir = settings.workspace / "oracle", .device = DeviceKind::Cuda});
  Guard guard(settings, oracle);
  const OrderedJson record =
      profile_solution(problem, problem.workloads.back(), solution, guard, oracle, options);
  fs::remove_all(dir);
  return record;
}

TEST(GpuNcuProfile, RmsnormBasicMovesTheBytesItMust) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  if (!find_ncu("").path) GTEST_SKIP() << "no Nsight Compute (ncu)";
  ProfileOptions options;
  options.executable = KERNELARC_BINARY;
  const OrderedJson record = profile_rmsnorm_basic(options);
  ASSERT_TRUE(record.contains("aggregate")) << record.dump(2);
  const double moved = record["aggregate"]["dram_bytes_read"].get<double>() +
                       record["aggregate"]["dram_bytes_write"].get<double>();
  EXPECT_GE(moved, 0.5 * record["required_bytes_per_call"].get<double>() * options.calls);
  EXPECT_FALSE(record.contains("red_flag")) << record["red_flag"];
}

// The source page of the real ncu: the parser was written from the source view's column names
// (tests/diagnosis/data/ncu_source_sample.csv is by hand); where the layout differs, the
// record's reason quotes the start of ncu's output.
TEST(GpuNcuProfile, TheSourcePageNamesWhereRmsnormStalls) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  if (!find_ncu("").path) GTEST_SKIP() << "no Nsight Compute (ncu)";
  ProfileOptions options;
  options.executable = KERNELARC_BINARY;
  options.source_hotspots = true;
  const OrderedJson record = profile_rmsnorm_basic(options);
  ASSERT_TRUE(record.contains("source")) << record.dump(2);
  const OrderedJson& source = record["source"];
  ASSERT_TRUE(source.contains("top")) << source.dump(2);
  EXPECT_GT(source["samples"].get<double>(), 0);
  EXPECT_FALSE(source["top"].empty());
  std::cout << source.value("text", "") << '\n';
}

}  // namespace
}  // namespace kernelarc
