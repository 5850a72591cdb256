#include "backend/calibrate.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

#include <gtest/gtest.h>

#include "core/error.h"

namespace kernelarc {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() /
            ("kernelarc_calibrate_" + std::to_string(getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

Calibration sample() {
  Calibration c;
  c.device = "cuda:1";
  c.description = "NVIDIA H200";
  c.measured_at = "2025-01-31T12:00:00Z";
  c.copy_bandwidth_gbs = 4312.5;
  c.tensor_tflops = {{"bfloat16", 791.25}, {"float8_e4m3fn", 1402.0}};
  c.fp32_fma_tflops = 61.5;
  c.l2_bytes = 62914560;
  c.sm_count = 132;
  c.llc_bytes = 62914560;
  c.cores = 0;
  c.environment = {{"driver", "580.159.03"}, {"cuda_runtime", "13.0"}};
  return c;
}

void expect_same(const Calibration& a, const Calibration& b) {
  EXPECT_EQ(a.device, b.device);
  EXPECT_EQ(a.description, b.description);
  EXPECT_EQ(a.measured_at, b.measured_at);
  EXPECT_DOUBLE_EQ(a.copy_bandwidth_gbs, b.copy_bandwidth_gbs);
  EXPECT_EQ(a.tensor_tflops, b.tensor_tflops);
  EXPECT_DOUBLE_EQ(a.fp32_fma_tflops, b.fp32_fma_tflops);
  EXPECT_EQ(a.l2_bytes, b.l2_bytes);
  EXPECT_EQ(a.sm_count, b.sm_count);
  EXPECT_EQ(a.llc_bytes, b.llc_bytes);
  EXPECT_EQ(a.cores, b.cores);
  EXPECT_EQ(a.environment, b.environment);
}

TEST(CalibrationJson, RoundTrip) {
  const Calibration original = sample();
  expect_same(original, Calibration::from_json(original.to_json()));
  // Through text too, as the file stores it.
  expect_same(original, Calibration::from_json(nlohmann::json::parse(original.to_json().dump())));
}

TEST(CalibrationJson, MissingOrMistypedFieldIsNamed) {
  auto json = sample().to_json();
  json.erase("copy_bandwidth_gbs");
  try {
    Calibration::from_json(json, "cal.json");
    FAIL() << "expected InputError";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("cal.json"), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("copy_bandwidth_gbs"), std::string::npos);
  }
  json = sample().to_json();
  json["tensor_tflops"]["bfloat16"] = "fast";
  EXPECT_THROW(Calibration::from_json(json), InputError);
  json = sample().to_json();
  json["device"] = "tpu:0";
  EXPECT_THROW(Calibration::from_json(json), InputError);
}

TEST(CalibrationStore, SaveThenLoadPerDevice) {
  TempDir dir;
  EXPECT_FALSE(load_calibration(dir.path(), "cuda:1").has_value());
  const Calibration gpu = sample();
  save_calibration(dir.path(), gpu);
  EXPECT_TRUE(fs::exists(dir.path() / "calibration" / "cuda-1.json"));
  auto loaded = load_calibration(dir.path(), "cuda:1");
  ASSERT_TRUE(loaded.has_value());
  expect_same(gpu, *loaded);
  EXPECT_FALSE(load_calibration(dir.path(), "cuda:0").has_value());
  EXPECT_FALSE(load_calibration(dir.path(), "cpu").has_value());

  Calibration newer = gpu;
  newer.copy_bandwidth_gbs = 4400;
  save_calibration(dir.path(), newer);
  EXPECT_DOUBLE_EQ(load_calibration(dir.path(), "cuda:1")->copy_bandwidth_gbs, 4400);
}

TEST(CalibrationStore, MalformedFileIsAnInputErrorNamingIt) {
  TempDir dir;
  fs::create_directories(dir.path() / "calibration");
  std::ofstream(dir.path() / "calibration" / "cpu.json") << "{\"device\": \"cpu\",";
  try {
    load_calibration(dir.path(), "cpu");
    FAIL() << "expected InputError";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("cpu.json"), std::string::npos) << error.what();
  }
  EXPECT_THROW(load_calibration(dir.path(), "gpu0"), InputError);
}

TEST(CalibrateCpu, MeasuresPlausibleCeilings) {
  const Calibration c = calibrate_cpu();
  EXPECT_EQ(c.device, "cpu");
  EXPECT_FALSE(c.description.empty());
  EXPECT_EQ(c.measured_at.size(), 20u) << c.measured_at;
  EXPECT_GE(c.cores, 1);
  // Bounds far outside any real machine: they catch unit and counting mistakes only.
  EXPECT_GT(c.copy_bandwidth_gbs, 0.1);
  EXPECT_LT(c.copy_bandwidth_gbs, 100000.0);
  EXPECT_GT(c.fp32_fma_tflops, 1e-4);
  EXPECT_LT(c.fp32_fma_tflops, 1000.0);
  EXPECT_TRUE(c.tensor_tflops.empty());
  EXPECT_EQ(c.sm_count, 0);
  EXPECT_TRUE(c.environment.count("compiler"));
  // The bandwidth is the best of several methods, and the calibration says which one won.
  ASSERT_TRUE(c.environment.count("bandwidth_method"));
  EXPECT_TRUE(c.environment.count("bandwidth: " + c.environment.at("bandwidth_method")));
  EXPECT_TRUE(c.environment.count("bandwidth: memcpy, " + std::to_string(c.cores) + " thread" +
                                  (c.cores == 1 ? "" : "s")));
  std::cout << "cpu bandwidth " << c.copy_bandwidth_gbs << " GB/s by "
            << c.environment.at("bandwidth_method") << "\n";
  expect_same(c, Calibration::from_json(c.to_json()));
}

bool means_no_gpu(const std::string& message) {
  return message.find("without CUDA") != std::string::npos ||
         message.find("no CUDA device") != std::string::npos;
}

TEST(CalibrateCuda, BadOrdinalOrNoDeviceIsAClearError) {
  try {
    calibrate_cuda(999);
    FAIL() << "expected InternalError";
  } catch (const InternalError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("cuda:999"), std::string::npos) << message;
    EXPECT_TRUE(means_no_gpu(message) || message.find("no such device") != std::string::npos)
        << message;
  }
}

TEST(GpuCalibrate, MeasuresHopperClassCeilings) {
  Calibration c;
  try {
    c = calibrate_cuda(0);
  } catch (const InternalError& error) {
    if (means_no_gpu(error.what())) GTEST_SKIP() << error.what();
    throw;
  }
  EXPECT_EQ(c.device, "cuda:0");
  EXPECT_GT(c.sm_count, 0);
  EXPECT_GT(c.l2_bytes, 0);
  ASSERT_TRUE(c.tensor_tflops.count("bfloat16"));
  EXPECT_GT(c.tensor_tflops.at("bfloat16"), 100.0);
  EXPECT_GT(c.copy_bandwidth_gbs, 1000.0);
  EXPECT_GT(c.fp32_fma_tflops, 1.0);
  for (const auto& [dtype, tflops] : c.tensor_tflops) EXPECT_GT(tflops, 0) << dtype;
  // The best of cudaMemcpy and the copy, read-only and write-only kernels, named.
  ASSERT_TRUE(c.environment.count("bandwidth_method"));
  EXPECT_TRUE(c.environment.count("bandwidth: cudaMemcpy D2D"));
  EXPECT_TRUE(c.environment.count("bandwidth: " + c.environment.at("bandwidth_method")));
  std::cout << c.to_json().dump(2) << "\n";
}

}  // namespace
}  // namespace kernelarc
