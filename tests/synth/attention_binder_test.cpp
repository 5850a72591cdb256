// The attention binder: each layout (dense bhsd/bshd, ragged, paged) is told from the tensors,
// the sizes and constants the launch specs use are right, the generated accessors address the
// rows a hand-computed page table says (compiled and run on the CPU), and definitions the
// templates cannot serve are rejected naming the field.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include <fmt/format.h>

#include "../core/test_support.h"
#include "binder_test_support.h"
#include "source_dir.h"
#include "synth/family.h"
#include "synth/family_attention.h"

namespace kernelarc {
namespace {

using testing::contains;
using testing::input_error_of;

KernelTemplate attention_template(const std::string& target = "cuda",
                                  TemplateBuild build = TemplateBuild::Nvrtc) {
  return testing::stub_template("attention_test", {"attention"}, target, build);
}

KernelTemplate nvfp4_template(const std::string& target = "cuda") {
  return testing::stub_template("attention_nvfp4_test", {"attention_nvfp4"}, target,
                                TemplateBuild::SharedObject);
}

OrderedJson tensor(const std::vector<std::string>& shape, const std::string& dtype = "bfloat16") {
  return {{"shape", shape}, {"dtype", dtype}};
}

OrderedJson scalar(const std::string& dtype = "float32") {
  return {{"shape", nullptr}, {"dtype", dtype}};
}

/// An attention definition with 8 query heads over 2 key/value heads of 16 dims, page size 2.
Definition make_definition(const OrderedJson& inputs, const OrderedJson& outputs,
                           const OrderedJson& op_params = OrderedJson::object(),
                           const std::string& family = "attention") {
  std::string parameters;
  for (const auto& [name, spec] : inputs.items())
    parameters += (parameters.empty() ? "" : ", ") + name;
  OrderedJson json = {{"name", "attention_case"},
                      {"op_type", "attention"},
                      {"axes",
                       {{"B", {{"type", "var"}}},
                        {"S", {{"type", "var"}}},
                        {"T", {{"type", "var"}}},
                        {"KV", {{"type", "var"}}},
                        {"P", {{"type", "var"}}},
                        {"L", {{"type", "var"}}},
                        {"N", {{"type", "var"}}},
                        {"num_qo_heads", {{"type", "const"}, {"value", 8}}},
                        {"num_kv_heads", {{"type", "const"}, {"value", 2}}},
                        {"head_dim", {{"type", "const"}, {"value", 16}}},
                        {"page_size", {{"type", "const"}, {"value", 2}}},
                        {"head_bytes", {{"type", "expr"}, {"expression", "head_dim // 2"}}},
                        {"scale_blocks", {{"type", "expr"}, {"expression", "head_dim // 16"}}},
                        {"four", {{"type", "const"}, {"value", 4}}}}},
                      {"inputs", inputs},
                      {"outputs", outputs},
                      {"reference", "def run(" + parameters + "):\n    pass\n"},
                      {"kernelarc", {{"op_family", family}, {"op_params", op_params}}}};
  return parse_definition(json, "attention_case.json");
}

const OrderedJson kPagedPrefillInputs = {
    {"q", tensor({"T", "num_qo_heads", "head_dim"})},
    {"k_cache", tensor({"P", "page_size", "num_kv_heads", "head_dim"})},
    {"v_cache", tensor({"P", "page_size", "num_kv_heads", "head_dim"})},
    {"qo_indptr", tensor({"L"}, "int32")},
    {"kv_indptr", tensor({"L"}, "int32")},
    {"kv_indices", tensor({"N"}, "int32")},
    {"kv_last_page_len", tensor({"B"}, "int32")},
    {"sm_scale", scalar()}};
const OrderedJson kTokenOutputs = {{"output", tensor({"T", "num_qo_heads", "head_dim"})},
                                   {"lse", tensor({"T", "num_qo_heads"}, "float32")}};

TEST(AttentionBinder, BindsTheBuiltInDenseProblems) {
  const Definition prefill =
      load_definition(kSource / "problems/cuda/attention_causal_bf16_h32_d128/definition.json");
  const FamilyBinding p = make_attention_binder()->bind(prefill, attention_template());
  EXPECT_EQ(p.sizes.at("BATCH"), "batch_size");
  EXPECT_EQ(p.sizes.at("TOTAL_Q"), "(batch_size * seq_len)");
  EXPECT_EQ(p.sizes.at("MAX_Q_LEN"), "seq_len");
  EXPECT_EQ(p.sizes.at("MAX_KV_LEN"), "seq_len");
  EXPECT_EQ(p.constants.at("GROUP"), 1);
  EXPECT_EQ(p.constants.at("CAUSAL"), 1);
  EXPECT_EQ(p.constants.at("DECODE"), 0);
  EXPECT_EQ(p.constants.at("ELEM_BYTES"), 2);
  EXPECT_TRUE(contains(p.header, "#define KA_LAYOUT_BHSD 1"));
  EXPECT_TRUE(contains(p.header, "return q + ((b * KA_Q_HEADS + h) * q_seq_ + i) * KA_HEAD_DIM;"));
  EXPECT_TRUE(contains(p.header,
                       "#define KA_ARGS (KaArgs{ka_in_q, ka_in_k, ka_in_v, ka_out_output, "
                       "ka_axis_batch_size, ka_axis_seq_len, ka_axis_seq_len, "
                       "ka_axis_batch_size * ka_axis_seq_len})"));

  const Definition decode =
      load_definition(kSource / "problems/cuda/gqa_decode_bf16_q32_kv8_d128/definition.json");
  const FamilyBinding d = make_attention_binder()->bind(decode, attention_template());
  EXPECT_EQ(d.constants.at("GROUP"), 4);
  EXPECT_EQ(d.constants.at("DECODE"), 1);
  EXPECT_EQ(d.constants.at("CAUSAL"), 0);
  EXPECT_EQ(d.sizes.at("MAX_Q_LEN"), "1");
  EXPECT_EQ(d.sizes.at("MAX_KV_LEN"), "kv_len");
  EXPECT_TRUE(contains(d.header, "return q + ((q_start(b) + i) * KA_Q_HEADS + h) * KA_HEAD_DIM;"));
}

TEST(AttentionBinder, TellsRaggedPagedAndTokenMajorLayoutsApart) {
  const FamilyBinding paged = make_attention_binder()->bind(
      make_definition(kPagedPrefillInputs, kTokenOutputs, {{"causal", true}}),
      attention_template());
  EXPECT_EQ(paged.sizes.at("BATCH"), "(L - 1)");
  EXPECT_EQ(paged.sizes.at("TOTAL_Q"), "T");
  EXPECT_EQ(paged.sizes.at("MAX_KV_LEN"), "(N * 2)");
  EXPECT_EQ(paged.constants.at("PAGE_SIZE"), 2);
  EXPECT_EQ(paged.constants.at("RAGGED_Q"), 1);
  EXPECT_TRUE(contains(paged.header, "#define KA_LAYOUT_PAGED 1"));
  EXPECT_TRUE(contains(paged.header, "const int* kv_indices;"));

  const FamilyBinding ragged = make_attention_binder()->bind(
      make_definition({{"q", tensor({"T", "num_qo_heads", "head_dim"})},
                       {"k", tensor({"KV", "num_kv_heads", "head_dim"})},
                       {"v", tensor({"KV", "num_kv_heads", "head_dim"})},
                       {"qo_indptr", tensor({"L"}, "int32")},
                       {"kv_indptr", tensor({"L"}, "int32")}},
                      {{"output", tensor({"T", "num_qo_heads", "head_dim"})}}),
      attention_template());
  EXPECT_TRUE(contains(ragged.header, "#define KA_LAYOUT_RAGGED 1"));
  EXPECT_EQ(ragged.sizes.at("MAX_KV_LEN"), "KV");
  // The scale defaults to 1/sqrt(16).
  EXPECT_TRUE(contains(ragged.header, "KA_HD float scale() const { return 0.25f; }"));

  const FamilyBinding bshd = make_attention_binder()->bind(
      make_definition({{"q", tensor({"B", "S", "num_qo_heads", "head_dim"}, "float16")},
                       {"k", tensor({"B", "S", "num_kv_heads", "head_dim"}, "float16")},
                       {"v", tensor({"B", "S", "num_kv_heads", "head_dim"}, "float16")}},
                      {{"out", tensor({"B", "S", "num_qo_heads", "head_dim"}, "float32")},
                       {"lse", tensor({"B", "S", "num_qo_heads"}, "float32")}},
                      {{"lse_base", "e"}, {"scale", 0.5}}),
      attention_template("cpu", TemplateBuild::SharedObject));
  EXPECT_TRUE(contains(bshd.header, "#define KA_LAYOUT_BSHD 1"));
  EXPECT_TRUE(contains(bshd.header, "typedef ka_f16 ka_qkv_t;\ntypedef float ka_o_t;"));
  EXPECT_TRUE(contains(bshd.header, "lse[(q_start(b) + i) * KA_Q_HEADS + h] = lse_natural;"));
  EXPECT_TRUE(contains(bshd.header, "return 0.5f;"));
  EXPECT_TRUE(contains(bshd.header, "inline const char* ka_bind("));
}

TEST(AttentionBinder, RejectsWhatTheTemplatesCannotServe) {
  const auto error = [](const Definition& def,
                        const KernelTemplate& kernel = attention_template()) {
    return input_error_of([&] { make_attention_binder()->bind(def, kernel); });
  };
  OrderedJson inputs = kPagedPrefillInputs;
  EXPECT_TRUE(contains(error(make_definition(inputs, kTokenOutputs, {{"window", 4}})),
                       "kernelarc.op_params.window: unknown field"));
  EXPECT_TRUE(contains(error(make_definition(inputs, kTokenOutputs, {{"lse_base", 10}})),
                       "kernelarc.op_params.lse_base: expected 2 or \"e\", got 10"));
  inputs["alibi"] = tensor({"num_qo_heads"}, "float32");
  EXPECT_TRUE(contains(error(make_definition(inputs, kTokenOutputs)),
                       "inputs.alibi: not an attention input"));
  inputs = kPagedPrefillInputs;
  inputs["kv_indices"] = tensor({"N"}, "float32");
  EXPECT_TRUE(contains(error(make_definition(inputs, kTokenOutputs)),
                       "inputs.kv_indices.dtype: expected int32 or int64, got float32"));
  inputs = kPagedPrefillInputs;
  inputs["v_cache"] = tensor({"P", "page_size", "num_kv_heads", "head_dim"}, "float16");
  EXPECT_TRUE(contains(error(make_definition(inputs, kTokenOutputs)),
                       "inputs.v_cache.dtype: expected the dtype of q, bfloat16"));
  EXPECT_TRUE(contains(error(make_definition(kPagedPrefillInputs,
                                             {{"output", tensor({"T", "num_qo_heads", "head_dim"})},
                                              {"lse", tensor({"T", "num_qo_heads"}, "bfloat16")}})),
                       "outputs.lse.dtype: expected float32"));
  EXPECT_TRUE(
      contains(error(make_definition({{"q", tensor({"B", "num_qo_heads", "S", "head_dim"})},
                                      {"k", tensor({"B", "num_kv_heads", "S", "head_dim"})},
                                      {"v", tensor({"B", "num_kv_heads", "S", "head_dim"})},
                                      {"kv_indices", tensor({"N"}, "int32")}},
                                     {{"output", tensor({"B", "num_qo_heads", "S", "head_dim"})}},
                                     {{"layout", "bhsd"}})),
               "inputs.kv_indices: a dense layout takes no index arrays"));
  // The head count must be static to size the grid.
  EXPECT_TRUE(contains(error(make_definition({{"q", tensor({"T", "S", "head_dim"})},
                                              {"k", tensor({"KV", "num_kv_heads", "head_dim"})},
                                              {"v", tensor({"KV", "num_kv_heads", "head_dim"})},
                                              {"qo_indptr", tensor({"L"}, "int32")},
                                              {"kv_indptr", tensor({"L"}, "int32")}},
                                             {{"output", tensor({"T", "S", "head_dim"})}})),
                       "inputs.q: the query head count (S) must be a const or expr axis"));
}

// NVFP4 decode: float4 K/V rows of head_dim / 2 bytes with a float8_e4m3fn scale per 16 values.
const OrderedJson kNvfp4DecodeInputs = {
    {"q", tensor({"B", "num_qo_heads", "head_dim"})},
    {"k_cache", tensor({"B", "S", "num_kv_heads", "head_bytes"}, "float4_e2m1fn_x2")},
    {"v_cache", tensor({"B", "S", "num_kv_heads", "head_bytes"}, "float4_e2m1fn_x2")},
    {"k_scale", tensor({"B", "S", "num_kv_heads", "scale_blocks"}, "float8_e4m3fn")},
    {"v_scale", tensor({"B", "S", "num_kv_heads", "scale_blocks"}, "float8_e4m3fn")}};
const OrderedJson kDecodeOutputs = {{"output", tensor({"B", "num_qo_heads", "head_dim"})}};

TEST(AttentionBinder, BindsNvfp4KeysAndValuesWithTheirScaleRows) {
  const Definition def =
      make_definition(kNvfp4DecodeInputs, kDecodeOutputs, {{"decode", true}}, "attention_nvfp4");
  const AttentionProblem p = read_attention_problem(def);
  EXPECT_TRUE(p.kv_fp4);
  EXPECT_EQ(p.layout, AttentionLayout::Bshd);
  EXPECT_EQ(p.head_dim, 16);
  EXPECT_EQ(p.k_scale.spec->name, "k_scale");
  EXPECT_EQ(p.v_scale.index, 4);
  const FamilyBinding binding = make_attention_binder()->bind(def, nvfp4_template());
  EXPECT_EQ(binding.constants.at("KV_FP4"), 1);
  EXPECT_EQ(binding.constants.at("DECODE"), 1);
  EXPECT_EQ(binding.sizes.at("MAX_KV_LEN"), "S");
  const std::string& header = binding.header;
  EXPECT_TRUE(contains(header, "#define KA_KV_FP4 1\n")) << header;
  EXPECT_TRUE(contains(header, "#define KA_KV_ROW_BYTES 8\n#define KA_KV_SCALES_PER_ROW 1\n"));
  EXPECT_TRUE(contains(header, "const unsigned char* k;"));
  EXPECT_TRUE(contains(header, "const unsigned char* v_scale;"));
  EXPECT_TRUE(contains(header,
                       "KA_HD const unsigned char* k_row(long long b, long long j, int kvh) const "
                       "{\n    return k + ((b * kv_seq_ + j) * KA_KV_HEADS + kvh) * "
                       "KA_KV_ROW_BYTES;"))
      << header;
  EXPECT_TRUE(contains(header,
                       "KA_HD const unsigned char* v_scale_row(long long b, long long j, int kvh) "
                       "const {\n    return v_scale + ((b * kv_seq_ + j) * KA_KV_HEADS + kvh) * "
                       "KA_KV_SCALES_PER_ROW;"))
      << header;
  // ka_bind checks the packed dtype by its ABI name and the byte shape.
  EXPECT_TRUE(contains(header, "KA_FLOAT4_E2M1FN_X2")) << header;
  EXPECT_TRUE(contains(header, "KA_FLOAT8_E4M3FN")) << header;

  // The bf16 problems say they are not NVFP4, so the bf16 templates can exclude the float4 ones.
  const Definition bf16 =
      load_definition(kSource / "problems/cuda/gqa_decode_bf16_q32_kv8_d128/definition.json");
  const FamilyBinding plain =
      make_attention_binder()->bind(bf16, attention_template("cuda", TemplateBuild::SharedObject));
  EXPECT_EQ(plain.constants.at("KV_FP4"), 0);
  EXPECT_TRUE(contains(plain.header, "#define KA_KV_FP4 0\n"));
  EXPECT_FALSE(contains(plain.header, "k_scale_row"));

  const Definition bundled =
      load_definition(kSource / "problems/cuda/gqa_decode_nvfp4kv_q32_kv8_d128/definition.json");
  const AttentionProblem built_in = read_attention_problem(bundled);
  EXPECT_TRUE(built_in.kv_fp4);
  EXPECT_EQ(built_in.q_heads, 32);
  EXPECT_EQ(built_in.kv_heads, 8);
  EXPECT_EQ(built_in.head_dim, 128);
}

TEST(AttentionBinder, RejectsNvfp4ThatTheTemplatesCannotServe) {
  const auto error = [](const OrderedJson& inputs,
                        const KernelTemplate& kernel = nvfp4_template()) {
    return input_error_of([&] {
      make_attention_binder()->bind(
          make_definition(inputs, kDecodeOutputs, {{"decode", true}}, "attention_nvfp4"), kernel);
    });
  };
  OrderedJson inputs = kNvfp4DecodeInputs;
  inputs.erase("v_scale");
  EXPECT_TRUE(contains(error(inputs), "inputs: float4 v_cache needs its block scales"))
      << error(inputs);
  inputs = kNvfp4DecodeInputs;
  inputs["k_scale"] = tensor({"B", "S", "num_kv_heads", "scale_blocks"}, "float32");
  EXPECT_TRUE(contains(error(inputs),
                       "inputs.k_scale.dtype: expected float8_e4m3fn (NVFP4 block "
                       "scales), got float32"));
  inputs = kNvfp4DecodeInputs;
  inputs["v_cache"] = tensor({"B", "S", "num_kv_heads", "head_dim"});
  EXPECT_TRUE(contains(error(inputs),
                       "inputs.v_cache.dtype: expected float4 like k_cache, got "
                       "bfloat16"));
  inputs = kNvfp4DecodeInputs;
  inputs["k_cache"] = tensor({"B", "S", "num_kv_heads", "head_dim"}, "float4_e2m1fn_x2");
  inputs["v_cache"] = inputs["k_cache"];
  EXPECT_TRUE(contains(error(inputs),
                       "inputs.k_cache: expected 8 bytes (two float4 values each) "
                       "on the last axis for the head dimension 16, got 16"));
  inputs = kNvfp4DecodeInputs;
  inputs["v_scale"] = tensor({"B", "S", "num_kv_heads", "four"}, "float8_e4m3fn");
  EXPECT_TRUE(contains(error(inputs),
                       "inputs.v_scale: expected 1 scales (one per 16 values) on "
                       "the last axis, got 4"));
  inputs = kNvfp4DecodeInputs;
  inputs["k_scale"] = tensor({"S", "B", "num_kv_heads", "scale_blocks"}, "float8_e4m3fn");
  EXPECT_TRUE(contains(error(inputs),
                       "inputs.k_scale: expected the shape of k_cache with scale "
                       "blocks last, [B, S, num_kv_heads, ...]"));
  // Scales without float4 keys, and float4 where no template reads it.
  OrderedJson bf16 = kNvfp4DecodeInputs;
  bf16["k_cache"] = tensor({"B", "S", "num_kv_heads", "head_dim"});
  bf16["v_cache"] = bf16["k_cache"];
  EXPECT_TRUE(contains(error(bf16), "inputs.k_scale: block scales go with float4 keys and values"));
  bf16.erase("k_scale");
  bf16.erase("v_scale");
  EXPECT_TRUE(contains(error(bf16),
                       "kernelarc.op_family: \"attention_nvfp4\" needs float4 keys "
                       "and values, but k_cache is bfloat16"));
  EXPECT_TRUE(contains(input_error_of([&] {
                         make_attention_binder()->bind(
                             make_definition(kNvfp4DecodeInputs, kDecodeOutputs),
                             attention_template());
                       }),
                       "kernelarc.op_family: expected \"attention_nvfp4\" for float4 keys and "
                       "values"));
  EXPECT_TRUE(contains(error(kNvfp4DecodeInputs, nvfp4_template("cpu")),
                       "inputs.k_cache.dtype: float4_e2m1fn_x2 keys and values (NVFP4) are read "
                       "only by the CUDA templates"));
  OrderedJson prefill = kNvfp4DecodeInputs;
  prefill["q"] = tensor({"B", "T", "num_qo_heads", "head_dim"});
  EXPECT_TRUE(contains(
      input_error_of([&] {
        make_attention_binder()->bind(
            make_definition(prefill, {{"output", tensor({"B", "T", "num_qo_heads", "head_dim"})}},
                            OrderedJson::object(), "attention_nvfp4"),
            nvfp4_template());
      }),
      "float4 keys and values are served for decode only"));
}

// The start of a driver's main() that binds kPagedPrefillInputs to the hand-made page table below.
const char* const kPagedPrefillBind = R"(
int main() {
  static ka_bf16 q[5 * 8 * 16], k[3 * 2 * 2 * 16], v[3 * 2 * 2 * 16], o[5 * 8 * 16];
  static float lse[5 * 8], scale = 0.125f;
  int qo_indptr[] = {0, 3, 5}, kv_indptr[] = {0, 2, 3}, kv_indices[] = {2, 0, 1}, last[] = {1, 2};
  ka_tensor in[] = {make(q, KA_BFLOAT16, {5, 8, 16}), make(k, KA_BFLOAT16, {3, 2, 2, 16}),
                    make(v, KA_BFLOAT16, {3, 2, 2, 16}), make(qo_indptr, KA_INT32, {3}),
                    make(kv_indptr, KA_INT32, {3}), make(kv_indices, KA_INT32, {3}),
                    make(last, KA_INT32, {2}), make(&scale, KA_FLOAT32, {})};
  ka_tensor out[] = {make(o, KA_BFLOAT16, {5, 8, 16}), make(lse, KA_FLOAT32, {5, 8})};
  KaArgs ka;
  if (const char* e = ka_bind(in, 8, out, 2, &ka)) return std::printf("bind: %s\n", e), 1;)";

// The CPU header of a paged prefill problem, compiled with a driver that binds a hand-made page
// table: 2 sequences, page size 2, kv_indptr [0, 2, 3], kv_indices [2, 0, 1], last page lengths
// [1, 2], qo_indptr [0, 3, 5]. Sequence 0 has 3 keys (pages 2 and 0, the last one half full) and
// 3 queries; sequence 1 has 2 keys (page 1) and 2 queries.
TEST(AttentionBinder, TheAccessorsFollowThePageTable) {
  const Definition def = make_definition(kPagedPrefillInputs, kTokenOutputs, {{"causal", true}});
  const FamilyBinding binding =
      make_attention_binder()->bind(def, attention_template("cpu", TemplateBuild::SharedObject));
  const std::string output =
      testing::run_header_driver(binding.header, std::string(kPagedPrefillBind) + R"(
  std::printf("batch %lld total_q %lld scale %g\n", ka.batch(), ka.total_q(), ka.scale());
  for (long long b = 0; b < 2; ++b)
    std::printf("seq %lld: q_start %lld q_len %lld kv_len %lld limits %lld %lld\n", b,
                ka.q_start(b), ka.q_len(b), ka.kv_len(b), ka.causal_limit(b, 0),
                ka.causal_limit(b, ka.q_len(b) - 1));
  std::printf("rows of:");
  for (long long row = 0; row < 5; ++row) std::printf(" %lld", ka.sequence_of(row));
  std::printf("\nk rows (seq 0, kv head 1):");
  for (long long j = 0; j < 3; ++j) std::printf(" %ld", static_cast<long>(ka.k_row(0, j, 1) - k));
  std::printf("\nv row (seq 1, key 1, head 0): %ld\n", static_cast<long>(ka.v_row(1, 1, 0) - v));
  std::printf("q row (seq 1, query 1, head 3): %ld\n", static_cast<long>(ka.q_row(1, 1, 3) - q));
  ka.store_lse(1, 0, 2, 1.0f);
  std::printf("lse[3 * 8 + 2] %.6f\n", lse[3 * 8 + 2]);
  in[2].shape[0] = 4;
  const char* e = ka_bind(in, 8, out, 2, &ka);
  std::printf("mismatch: %s\n", e ? e : "none");
  return 0;
}
)");
  EXPECT_EQ(output,
            "batch 2 total_q 5 scale 0.125\n"
            // Causal, bottom-right: query i of 3 over 3 keys sees i + 1 keys.
            "seq 0: q_start 0 q_len 3 kv_len 3 limits 1 3\n"
            "seq 1: q_start 3 q_len 2 kv_len 2 limits 1 2\n"
            "rows of: 0 0 0 1 1\n"
            // Keys 0 and 1 are page 2, key 2 is page 0: ((page * 2 + slot) * 2 + 1) * 16.
            "k rows (seq 0, kv head 1): 144 176 16\n"
            // Key 1 of sequence 1 is slot 1 of page 1: (1 * 2 + 1) * 2 * 16.
            "v row (seq 1, key 1, head 0): 96\n"
            // Query row 4, head 3: (4 * 8 + 3) * 16.
            "q row (seq 1, query 1, head 3): 560\n"
            // ln -> log2.
            "lse[3 * 8 + 2] 1.442695\n"
            "mismatch: v_cache: expected shape [P, page_size, num_kv_heads, head_dim]\n");
}

// KaArgs::q_pitch and kv_pitch, which streaming kernels use to address a tile's rows by
// immediate offsets, are the distance between consecutive rows as the accessors compute it: in
// the head-major dense layout (rows of one head contiguous), the token-major dense layout (heads
// interleaved) and within a page of a paged cache.
TEST(AttentionBinder, ThePitchesAreTheDistanceBetweenConsecutiveRows) {
  // "q <row distance> <q_pitch> kv <k row distance> <v row distance> <kv_pitch>" from a driver
  // whose main() begins with `bind` (binding `ka`).
  auto pitches = [](const Definition& def, const std::string& bind) {
    const FamilyBinding binding =
        make_attention_binder()->bind(def, attention_template("cpu", TemplateBuild::SharedObject));
    return testing::run_header_driver(binding.header, bind + R"(
  std::printf("q %lld %lld kv %lld %lld %lld\n", static_cast<long long>(ka.q_row(0, 2, 3) - ka.q_row(0, 1, 3)),
              KaArgs::q_pitch, static_cast<long long>(ka.k_row(0, 1, 1) - ka.k_row(0, 0, 1)),
              static_cast<long long>(ka.v_row(0, 1, 1) - ka.v_row(0, 0, 1)), KaArgs::kv_pitch);
  return 0;
}
)");
  };
  // A dense driver's bind: q, k, v and the output of the given shapes (one sequence).
  auto dense_bind = [](const std::string& q_shape, const std::string& kv_shape) {
    return fmt::format(R"(
int main() {{
  static ka_bf16 q[1 << 14], k[1 << 14], v[1 << 14], o[1 << 14];
  ka_tensor in[] = {{make(q, KA_BFLOAT16, {0}), make(k, KA_BFLOAT16, {1}),
                    make(v, KA_BFLOAT16, {1})}};
  ka_tensor out[] = {{make(o, KA_BFLOAT16, {0})}};
  KaArgs ka;
  if (const char* e = ka_bind(in, 3, out, 1, &ka)) return std::printf("bind: %s\n", e), 1;)",
                       q_shape, kv_shape);
  };
  // Head-major (the built-in problem, 32 heads of 128 dims): a head's rows are contiguous.
  EXPECT_EQ(pitches(load_definition(kSource /
                                    "problems/cuda/attention_causal_bf16_h32_d128/definition.json"),
                    dense_bind("{1, 32, 4, 128}", "{1, 32, 4, 128}")),
            "q 128 128 kv 128 128 128\n");
  // Token-major: heads interleaved.
  EXPECT_EQ(pitches(make_definition({{"q", tensor({"B", "S", "num_qo_heads", "head_dim"})},
                                     {"k", tensor({"B", "S", "num_kv_heads", "head_dim"})},
                                     {"v", tensor({"B", "S", "num_kv_heads", "head_dim"})}},
                                    {{"out", tensor({"B", "S", "num_qo_heads", "head_dim"})}}),
                    dense_bind("{1, 4, 8, 16}", "{1, 4, 2, 16}")),
            "q 128 128 kv 32 32 32\n");
  // Paged: keys 0 and 1 of sequence 0 share page 2.
  EXPECT_EQ(pitches(make_definition(kPagedPrefillInputs, kTokenOutputs, {{"causal", true}}),
                    kPagedPrefillBind),
            "q 128 128 kv 32 32 32\n");
}

}  // namespace
}  // namespace kernelarc
