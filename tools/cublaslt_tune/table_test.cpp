#include "table.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.h"
#include "core/problem.h"
#include "gemm_shapes.h"

namespace kernelarc::cublaslt {
namespace {

namespace fs = std::filesystem;

Table sample_table() {
  Table table;
  table.device = "NVIDIA H200 \"test\" \\ rig";
  table.cublaslt_version = 130001;
  TableEntry linear;
  linear.m = 1;
  linear.n = 4096;
  linear.k = 4096;
  linear.algo_id = 66;
  linear.tile = 20;
  linear.stages = 21;
  linear.split_k = 8;
  linear.reduction = 4;
  linear.swizzle = 1;
  linear.custom = 3;
  linear.inner_shape = 2;
  linear.cluster = 3;
  linear.median_us = 12.345678901234567;
  linear.heuristic_median_us = 3;
  TableEntry mixed = linear;
  mixed.m = 127;
  mixed.a_k_major = false;
  mixed.b_k_major = false;
  mixed.type_a = DType::Float16;
  mixed.type_b = DType::Float16;
  mixed.type_c = DType::Float32;
  mixed.split_k = 1;
  mixed.reduction = 0;
  mixed.median_us = 1e-3;
  table.entries = {linear, mixed};
  return table;
}

class TempDir {
 public:
  TempDir()
      : path_(fs::temp_directory_path() / ("cublaslt_table_test_" + std::to_string(getpid()))) {
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream(path) << text;
}

/// The InputError message of loading `json` from a file named table.json.
std::string load_error(const std::string& json) {
  TempDir dir;
  write_file(dir.path() / "table.json", json);
  try {
    load_table(dir.path() / "table.json");
  } catch (const InputError& error) {
    return error.what();
  }
  return "(no error)";
}

std::string entry_json(const std::string& override_fields) {
  std::string fields =
      R"("m": 1, "n": 4096, "k": 4096, "layout": "mk_nk", "dtype": "bfloat16", "algo_id": 6,)"
      R"( "tile": 20, "stages": 8, "split_k": 1, "reduction": 0, "swizzle": 0, "custom": 0,)"
      R"( "median_us": 10.5, "heuristic_median_us": 11)";
  // A later duplicate key would be kept by nlohmann's ordered_json, so override by replacing.
  if (!override_fields.empty()) {
    const std::string key = override_fields.substr(0, override_fields.find(':') + 1);
    const auto at = fields.find(key);
    if (at != std::string::npos) {
      const auto end = fields.find(',', at);
      fields.replace(at, end == std::string::npos ? std::string::npos : end - at, override_fields);
    } else {
      fields += ", " + override_fields;
    }
  }
  return R"({"device": "H200", "cublaslt_version": 1, "entries": [{)" + fields + "}]}";
}

TEST(CublasLtTable, JsonRoundTrip) {
  const Table table = sample_table();
  EXPECT_EQ(table_from_json(table_to_json(table), "t.json"), table);
  const OrderedJson json = table_to_json(table);
  EXPECT_EQ(json["entries"][0]["layout"], "mk_nk");
  EXPECT_EQ(json["entries"][0]["dtype"], "bfloat16");
  EXPECT_EQ(json["entries"][1]["layout"], "km_kn");
  EXPECT_EQ(json["entries"][1]["dtype"], "float16,float16,float32");
}

TEST(CublasLtTable, SaveLoadRoundTrip) {
  TempDir dir;
  save_table(sample_table(), dir.path() / "table.json");
  EXPECT_EQ(load_table(dir.path() / "table.json"), sample_table());
}

TEST(CublasLtTable, HeaderRoundTrip) {
  const Table table = sample_table();
  const std::string header = render_header(table);
  EXPECT_NE(header.find("CUDA_R_16BF"), std::string::npos);
  EXPECT_EQ(parse_header(header, "ka_cublaslt_table.h"), table);
}

TEST(CublasLtTable, EmptyTableRoundTrips) {
  Table table;
  table.device = "H200";
  const std::string header = render_header(table);
  EXPECT_NE(header.find("ka_cublaslt_table_size = 0;"), std::string::npos);
  EXPECT_EQ(parse_header(header, "h"), table);
}

TEST(CublasLtTable, HeaderCompiles) {
  TempDir dir;
  write_file(dir.path() / "ka_cublaslt_table.h", render_header(sample_table()));
  write_file(dir.path() / "use.cpp",
             "#include \"ka_cublaslt_table.h\"\n"
             "static_assert(sizeof(ka_cublaslt_table) / sizeof(ka_cublaslt_table[0]) == 2);\n"
             "int main() { return ka_cublaslt_table[1].type_c == CUDA_R_32F ? 0 : 1; }\n");
  const std::string command = "c++ -std=c++17 -fsyntax-only -I" CUBLASLT_TEST_CUDA_INCLUDE " " +
                              (dir.path() / "use.cpp").string();
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
}

TEST(CublasLtTable, AcceptsAValidEntry) {
  EXPECT_EQ(load_error(entry_json("")), "(no error)");
}

TEST(CublasLtTable, RejectsMalformedTablesNamingFileAndField) {
  const std::string missing = load_error(
      R"({"device": "H200", "cublaslt_version": 1, "entries": [{"m": 1, "n": 2, "k": 3}]})");
  EXPECT_NE(missing.find("table.json: entries[0].layout: missing required field"),
            std::string::npos)
      << missing;
  EXPECT_NE(load_error(entry_json(R"("split_k": 0)"))
                .find("entries[0].split_k: expected an integer in [1,"),
            std::string::npos);
  EXPECT_NE(load_error(entry_json(R"("tile": "20")")).find("entries[0].tile: expected integer"),
            std::string::npos);
  EXPECT_NE(
      load_error(entry_json(R"("layout": "nn")")).find("entries[0].layout: expected \"mk_nk\""),
      std::string::npos);
  EXPECT_NE(load_error(entry_json(R"("dtype": "bf16")")).find("entries[0].dtype: expected one of"),
            std::string::npos);
  EXPECT_NE(load_error(entry_json(R"("dtype": "bool")")).find("cuBLASLt has no type for bool"),
            std::string::npos);
  EXPECT_NE(load_error(entry_json(R"("reduction": 3)")).find("entries[0].reduction"),
            std::string::npos);
  EXPECT_NE(load_error(entry_json(R"("median_us": -1)")).find("entries[0].median_us"),
            std::string::npos);
  EXPECT_NE(load_error(entry_json(R"("tiles": 3)")).find("entries[0]"), std::string::npos);
  EXPECT_NE(load_error(R"({"device": "H200", "entries": []})").find("cublaslt_version: missing"),
            std::string::npos);
  EXPECT_NE(load_error("{\"device\": ").find("table.json: invalid JSON"), std::string::npos);

  OrderedJson duplicated = table_to_json(sample_table());
  duplicated["entries"].push_back(duplicated["entries"][0]);
  try {
    table_from_json(duplicated, "dup.json");
    FAIL() << "a duplicate shape was accepted";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("dup.json: entries[2]: duplicate of entries[0]"),
              std::string::npos)
        << error.what();
  }
}

TEST(CublasLtTable, RejectsMalformedHeaders) {
  const std::string header = render_header(sample_table());
  const auto expect_error = [](const std::string& text, const std::string& fragment) {
    try {
      parse_header(text, "ka_cublaslt_table.h");
      ADD_FAILURE() << "accepted a header that should fail with " << fragment;
    } catch (const InputError& error) {
      EXPECT_NE(std::string(error.what()).find(fragment), std::string::npos) << error.what();
    }
  };
  std::string short_row = header;
  short_row.replace(short_row.find("{1, 4096"), 8, "{4096");
  expect_error(short_row, "expected 19 values in a row, got 18");
  std::string bad_type = header;
  bad_type.replace(bad_type.find("CUDA_R_16BF"), 11, "CUDA_R_99X");
  expect_error(bad_type, "expected a cudaDataType_t name");
  std::string wrong_size = header;
  wrong_size.replace(wrong_size.find("ka_cublaslt_table_size = 2;"), 27,
                     "ka_cublaslt_table_size = 3;");
  expect_error(wrong_size, "ka_cublaslt_table has 2 rows, ka_cublaslt_table_size says 3");
  expect_error("int x;\n", "ka_cublaslt_table.h: no KA_CUBLASLT_TABLE_DEVICE");
  std::string bad_split = header;
  bad_split.replace(bad_split.find(", 8, 4, 1, 3,"), 13, ", 0, 4, 1, 3,");
  expect_error(bad_split, "ka_cublaslt_table.h: entries[0].split_k");
}

TEST(CublasLtTable, ToolReloadsAndRendersWithoutAGpu) {
  TempDir dir;
  save_table(sample_table(), dir.path() / "in.json");
  const std::string command = std::string(CUBLASLT_TUNE_BINARY) + " --load " +
                              (dir.path() / "in.json").string() + " --out " +
                              (dir.path() / "out.json").string() + " --header " +
                              (dir.path() / "ka_cublaslt_table.h").string() + " > /dev/null";
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  EXPECT_EQ(load_table(dir.path() / "out.json"), sample_table());
  std::ifstream header(dir.path() / "ka_cublaslt_table.h");
  const std::string text((std::istreambuf_iterator<char>(header)),
                         std::istreambuf_iterator<char>());
  EXPECT_EQ(parse_header(text, "ka_cublaslt_table.h"), sample_table());
}

TEST(CublasLtGemmShapes, ReadsTheLinearLayerProblem) {
  const Problem problem = load_problem(fs::path(KERNELARC_SOURCE_DIR) / "problems/cuda/gemm_bf16");
  const GemmProblemShapes shapes = gemm_problem_shapes(problem);
  EXPECT_TRUE(shapes.a_k_major);
  EXPECT_TRUE(shapes.b_k_major);
  EXPECT_EQ(shapes.type_a, DType::BFloat16);
  EXPECT_EQ(shapes.type_c, DType::BFloat16);
  ASSERT_EQ(shapes.shapes.size(), 5u);
  EXPECT_EQ(shapes.shapes.front(), (GemmShape{1, 4096, 4096}));
  EXPECT_EQ(shapes.shapes.back(), (GemmShape{4096, 4096, 4096}));
}

TEST(CublasLtGemmShapes, RejectsANonGemmProblem) {
  const Problem problem =
      load_problem(fs::path(KERNELARC_SOURCE_DIR) / "problems/cuda/rmsnorm_bf16");
  EXPECT_THROW(gemm_problem_shapes(problem), InputError);
}

}  // namespace
}  // namespace kernelarc::cublaslt
