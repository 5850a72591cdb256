// The cuBLASLt configuration table: per GEMM shape, the Expert-API configuration that
// cublaslt_tune measured fastest on a device. It lives as JSON (the exported, reloadable form)
// and as a C++ header, ka_cublaslt_table.h, that the gemm_cublaslt template compiles in:
//
//   {"device": "NVIDIA H200", "cublaslt_version": 130000,
//    "entries": [{"m": 1, "n": 4096, "k": 4096, "layout": "mk_nk", "dtype": "bfloat16",
//                 "algo_id": 66, "tile": 20, "stages": 21, "split_k": 1, "reduction": 0,
//                 "swizzle": 0, "custom": 0, "inner_shape": 0, "cluster": 0,
//                 "median_us": 10.2, "heuristic_median_us": 11.9}]}
//
// layout: "<A><B>" as the row-major problem stores them, A "mk" ([M, K]) or "km", B "nk"
// ([N, K], a linear weight) or "kn", joined by "_". dtype: one dtype name when A, B and C share
// it, else "a,b,c". The configuration fields are the values of cuBLASLt's
// CUBLASLT_ALGO_CONFIG_* attributes; inner_shape and cluster are optional (default 0: the
// library's choice).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/dtype.h"

namespace kernelarc::cublaslt {

using OrderedJson = nlohmann::ordered_json;

struct TableEntry {
  int64_t m = 0, n = 0, k = 0;
  bool a_k_major = true;  ///< A is [M, K] (else [K, M])
  bool b_k_major = true;  ///< B is [N, K] (else [K, N])
  DType type_a = DType::BFloat16, type_b = DType::BFloat16, type_c = DType::BFloat16;
  int32_t algo_id = 0;
  uint32_t tile = 0;
  uint32_t stages = 0;
  int32_t split_k = 1;
  uint32_t reduction = 0;  ///< one cublasLtReductionScheme_t value: 0, 1, 2 or 4
  uint32_t swizzle = 0;    ///< 0 or 1
  uint32_t custom = 0;
  uint16_t inner_shape = 0;
  uint16_t cluster = 0;
  double median_us = 0;            ///< of this configuration
  double heuristic_median_us = 0;  ///< of the heuristic's first choice, measured alongside

  bool operator==(const TableEntry&) const = default;
};

struct Table {
  std::string device;
  int64_t cublaslt_version = 0;
  std::vector<TableEntry> entries;

  bool operator==(const Table&) const = default;
};

/// "mk_nk" etc. (see the header comment).
std::string layout_name(bool a_k_major, bool b_k_major);
/// "bfloat16", or "float16,float16,float32" when the types differ.
std::string dtype_field(DType a, DType b, DType c);
/// The cudaDataType_t enumerator of a dtype ("CUDA_R_16BF"); empty when cuBLASLt has none.
std::string_view cuda_type_name(DType dtype);

OrderedJson table_to_json(const Table& table);
/// Checks every field; InputError "<where>: entries[3].split_k: expected ..." on bad input, and
/// for two entries of the same shape, layout and dtype.
Table table_from_json(const OrderedJson& json, std::string_view where);
Table load_table(const std::filesystem::path& path);
/// InputError naming the file when it cannot be written.
void save_table(const Table& table, const std::filesystem::path& path);

/// ka_cublaslt_table.h: the struct KaCublasLtConfig, the array ka_cublaslt_table with
/// ka_cublaslt_table_size rows, and the device and cuBLASLt version as macros.
std::string render_header(const Table& table);
/// Reads a header that render_header wrote back into a table (checked like the JSON form);
/// InputError "<where>:<line>: ..." for a line it cannot read.
Table parse_header(const std::string& text, std::string_view where);

}  // namespace kernelarc::cublaslt
