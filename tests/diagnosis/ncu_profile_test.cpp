#include "diagnosis/ncu_profile.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "core/json_fields.h"

namespace kernelarc {
namespace {

// tests/diagnosis/data/ncu_raw_sample.csv is written by hand in the exact format of
// `ncu --csv --page raw --print-units base` (ncu's progress lines and the program's own output
// before the table, a header row, a units row, one row per launch, metric columns sorted by
// name), with a kernel name holding commas, thousands separators and an "n/a" value. It has
// three launches: the norm kernel twice and a small add kernel between them.
std::string sample() {
  return read_text_file(std::filesystem::path(KERNELARC_SOURCE_DIR) /
                        "tests/diagnosis/data/ncu_raw_sample.csv");
}

const std::string kNormKernel =
    "void ka_rownorm_kernel<(int)8, (int)256>(const __nv_bfloat16 *, const __nv_bfloat16 *, "
    "__nv_bfloat16 *, int, float)";

TEST(NcuProfile, ParsesTheRawPage) {
  const NcuResult result = parse_ncu_output(sample(), 0);
  ASSERT_TRUE(result.profile) << result.unavailable;
  EXPECT_TRUE(result.unavailable.empty());
  const NcuProfile& profile = *result.profile;
  ASSERT_EQ(profile.kernels.size(), 3u);

  const NcuKernel& first = profile.kernels[0];
  EXPECT_EQ(first.id, 0);
  EXPECT_EQ(first.name, kNormKernel);  // the commas inside quotes stay in the name
  EXPECT_EQ(first.block_size, "(256, 1, 1)");
  EXPECT_EQ(first.grid_size, "(16384, 1, 1)");
  EXPECT_EQ(first.metric("dram__bytes_read.sum"), 134217728.0);  // "134,217,728"
  EXPECT_EQ(first.metric("gpu__time_duration.sum"), 80000.0);
  EXPECT_EQ(first.metric("launch__registers_per_thread"), 32.0);
  EXPECT_EQ(first.metric("sm__warps_active.avg.pct_of_peak_sustained_active"), 87.5);
  EXPECT_EQ(first.metric("not_collected"), std::nullopt);

  const NcuKernel& add = profile.kernels[1];
  EXPECT_EQ(add.name, "ka_residual_add");
  EXPECT_EQ(add.metric("lts__t_sector_hit_rate.pct"), std::nullopt);  // "n/a"
  EXPECT_TRUE(add.metrics.contains("lts__t_sector_hit_rate.pct"));
  EXPECT_EQ(profile.kernels[2].id, 2);

  EXPECT_EQ(profile.units.at("dram__bytes_read.sum"), "byte");
  EXPECT_EQ(profile.units.at("gpu__time_duration.sum"), "nsecond");
  EXPECT_EQ(profile.units.at("dram__throughput.avg.pct_of_peak_sustained_elapsed"), "%");
  // Every metric that a profile asks for is a column of the sample.
  for (const std::string& metric : ncu_metrics()) {
    EXPECT_TRUE(profile.units.contains(metric)) << metric;
  }
}

// tests/diagnosis/data/ncu_h200_rmsnorm.txt is real: Nsight Compute on an H200 (driver 580,
// CUDA 13.0), `ncu --csv --page raw --print-units base --clock-control none -k regex:ka_ -c 3
// --metrics <ncu_metrics()> --target-processes all kernelarc templates try
// problems/cuda/rmsnorm_bf16 rownorm_cuda --workloads largest ...`: three launches of the
// default rownorm point on 16384 x 4096 bf16 rows, with the program's own output first and
// every device__attribute column ncu adds to the raw page.
TEST(NcuProfile, ReadsARealH200Profile) {
  const NcuResult result =
      parse_ncu_output(read_text_file(std::filesystem::path(KERNELARC_SOURCE_DIR) /
                                      "tests/diagnosis/data/ncu_h200_rmsnorm.txt"),
                       0);
  ASSERT_TRUE(result.profile) << result.unavailable;
  const NcuProfile& profile = *result.profile;
  ASSERT_EQ(profile.kernels.size(), 3u);
  for (const NcuKernel& kernel : profile.kernels) {
    EXPECT_EQ(kernel.name, "ka_rownorm");
    EXPECT_EQ(kernel.grid_size, "(16384, 1, 1)");
  }
  const NcuKernel& first = profile.kernels[0];
  EXPECT_EQ(first.metric("dram__bytes_read.sum"), 134257152.0);  // "134,257,152"
  EXPECT_EQ(first.metric("dram__bytes_write.sum"), 113336576.0);
  EXPECT_EQ(first.metric("gpu__time_duration.sum"), 70560.0);
  EXPECT_EQ(first.metric("launch__registers_per_thread"), 62.0);
  EXPECT_EQ(profile.aggregate.launches, 3);
  EXPECT_EQ(profile.aggregate.max_registers_per_thread, 62);
  ASSERT_TRUE(profile.aggregate.dram_throughput_pct);
  EXPECT_NEAR(*profile.aggregate.dram_throughput_pct, 72.0, 1.0);
  EXPECT_NEAR(profile.aggregate.stalls.at("long_scoreboard"), 9.6, 0.2);
  // Recorded before the tensor pipe's metric joined the set (its name is on the H200's
  // `ncu --query-metrics --chip gh100` list); every other metric is a column.
  const std::string tensor_pipe = "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active";
  for (const std::string& metric : ncu_metrics())
    EXPECT_EQ(profile.units.contains(metric), metric != tensor_pipe) << metric;
  EXPECT_FALSE(profile.aggregate.tensor_pipe_pct);
  // Each launch reads the 128 MiB of rows: plausible bytes, no red flag. (DRAM writes come out
  // below the 128 MiB written: lines still in the 60 MB L2 when the kernel ends are not
  // counted.)
  const double required = 2.0 * 16384 * 4096 * 2;
  EXPECT_EQ(dram_bytes_red_flag(profile.aggregate, required, 3), std::nullopt);
}

TEST(NcuProfile, AggregatesSumBytesAndWeighPercentagesByTime) {
  const NcuAggregate total = parse_ncu_output(sample(), 0).profile->aggregate;
  EXPECT_EQ(total.launches, 3);
  EXPECT_DOUBLE_EQ(total.duration_ns, 200000);
  EXPECT_DOUBLE_EQ(total.dram_bytes_read, 2.0 * 134217728 + 1048576);
  EXPECT_DOUBLE_EQ(total.dram_bytes_write, 2.0 * 134217728 + 2048);
  // (90 * 80 + 40 * 20 + 80 * 100) / 200
  EXPECT_DOUBLE_EQ(*total.dram_throughput_pct, 80.0);
  // (20 * 80 + 10 * 20 + 30 * 100) / 200
  EXPECT_DOUBLE_EQ(*total.sm_throughput_pct, 24.0);
  // The add kernel's "n/a" hit rate is left out of the weights: (5 * 80 + 10 * 100) / 180.
  EXPECT_DOUBLE_EQ(*total.l2_hit_rate_pct, 1400.0 / 180.0);
  // Only the add kernel kept the tensor pipe busy: 60 * 20 / 200.
  EXPECT_DOUBLE_EQ(*total.tensor_pipe_pct, 6.0);
  EXPECT_EQ(total.max_registers_per_thread, 32);
  // (12 * 80 + 2 * 20 + 8 * 100) / 200
  EXPECT_DOUBLE_EQ(total.stalls.at("long_scoreboard"), 9.0);
  EXPECT_EQ(total.stalls.size(), ncu_stall_metrics().size());
}

TEST(NcuProfile, ScaledUnitsBecomeBaseUnits) {
  const std::string output =
      "\"ID\",\"Kernel Name\",\"dram__bytes_read.sum\",\"gpu__time_duration.sum\"\n"
      "\"\",\"\",\"Mbyte\",\"usecond\"\n"
      "\"0\",\"k\",\"1.5\",\"2,000.25\"\n";
  const NcuResult result = parse_ncu_output(output, 0);
  ASSERT_TRUE(result.profile) << result.unavailable;
  EXPECT_DOUBLE_EQ(*result.profile->kernels[0].metric("dram__bytes_read.sum"), 1.5e6);
  EXPECT_DOUBLE_EQ(*result.profile->kernels[0].metric("gpu__time_duration.sum"), 2000250);
  EXPECT_EQ(result.profile->units.at("dram__bytes_read.sum"), "Mbyte");
}

TEST(NcuProfile, PermissionErrorIsAReason) {
  const std::string output =
      "==PROF== Connected to process 812 (/opt/kernelarc/bin/kernelarc)\n"
      "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU "
      "Performance Counters on the target device 0. For instructions on enabling permissions "
      "and to get more information see https://developer.nvidia.com/ERR_NVGPUCTRPERM\n"
      "==PROF== Disconnected from process 812\n"
      "==WARNING== No kernels were profiled.\n";
  const NcuResult result = parse_ncu_output(output, 0);
  EXPECT_FALSE(result.profile);
  EXPECT_NE(result.unavailable.find("ERR_NVGPUCTRPERM"), std::string::npos) << result.unavailable;
  EXPECT_NE(result.unavailable.find("permission"), std::string::npos) << result.unavailable;
}

TEST(NcuProfile, AbsentProfilerAndEmptyRuns) {
  EXPECT_NE(parse_ncu_output("sh: 1: ncu: not found\n", 127).unavailable.find("not found"),
            std::string::npos);
  EXPECT_NE(parse_ncu_output("==WARNING== No kernels were profiled.\n", 0)
                .unavailable.find("profiled no kernel"),
            std::string::npos);
  const NcuResult failed =
      parse_ncu_output("==ERROR== Failed to prepare kernel for profiling\n", 9);
  EXPECT_FALSE(failed.profile);
  EXPECT_NE(failed.unavailable.find("(exit code 9): ==ERROR== Failed to prepare"),
            std::string::npos)
      << failed.unavailable;
}

TEST(NcuProfile, CommandLine) {
  const auto argv = ncu_command("/usr/local/cuda/bin/ncu", "/opt/kernelarc/bin/kernelarc",
                                {"worker", "--profile"});
  ASSERT_GE(argv.size(), 13u);
  EXPECT_EQ(argv.front(), "/usr/local/cuda/bin/ncu");
  const std::vector<std::string> options(argv.begin() + 1, argv.begin() + 9);
  EXPECT_EQ(options, (std::vector<std::string>{"--csv", "--page", "raw", "--print-units", "base",
                                               "--clock-control", "none", "--metrics"}));
  EXPECT_NE(argv[9].find("dram__bytes_read.sum,dram__bytes_write.sum"), std::string::npos);
  EXPECT_NE(
      argv[9].find("smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio"),
      std::string::npos);
  EXPECT_EQ(std::count(argv[9].begin(), argv[9].end(), ','),
            static_cast<long>(ncu_metrics().size()) - 1);
  EXPECT_EQ((std::vector<std::string>(argv.end() - 5, argv.end())),
            (std::vector<std::string>{"--target-processes", "all", "/opt/kernelarc/bin/kernelarc",
                                      "worker", "--profile"}));
}

TEST(NcuProfile, DramBytesRedFlag) {
  NcuAggregate aggregate;
  aggregate.dram_bytes_read = 30e6;
  aggregate.dram_bytes_write = 10e6;
  EXPECT_FALSE(dram_bytes_red_flag(aggregate, 67e6));         // 0.6x: plausible
  const auto flag = dram_bytes_red_flag(aggregate, 67e6, 2);  // 0.30x over two calls
  ASSERT_TRUE(flag);
  EXPECT_NE(flag->find("0.30x of the 134 MB"), std::string::npos) << *flag;
  EXPECT_FALSE(dram_bytes_red_flag(aggregate, 0));
}

}  // namespace
}  // namespace kernelarc
