#include <gtest/gtest.h>

#include <map>
#include <set>

#include "../core/test_support.h"
#include "synth/constrained_space.h"
#include "synth/kernel_template.h"

namespace kernelarc {
namespace {

using testing::input_error_of;
using Roles = std::vector<std::string>;

KnobPoint point(int64_t a, int64_t b, int64_t c) {
  return {{"a", a}, {"b", b}, {"c", c}};
}

// The knob_space_test space (a * b <= 6, c == 0 or a + b <= 4: 17 points), with roles.
ConstrainedSpace roled_space() {
  return ConstrainedSpace(KnobSpace({Knob::int_range("a", 1, 4).with_roles({"parallelism"}),
                                     Knob::int_range("b", 1, 5).with_roles({"memory", "compute"}),
                                     Knob::boolean("c").with_roles({"fusion"})},
                                    {"a * b <= 6", "c == 0 or a + b <= 4"}),
                          {});
}

KnobFilter role(const std::string& name) {
  return [name](const Knob& knob) { return knob.has_role(name); };
}

std::set<std::string> changed_knobs(const KnobPoint& from, const KnobPoint& to) {
  std::set<std::string> names;
  for (const auto& [name, value] : to) {
    if (from.at(name) != value) names.insert(name);
  }
  return names;
}

TEST(KnobRoles, SetCheckedAndKeptInOrder) {
  EXPECT_EQ(knob_role_names(), (Roles{"memory", "parallelism", "compute", "fusion", "library"}));
  EXPECT_TRUE(Knob::pow2("V", 1, 8).roles().empty());
  const Knob knob = Knob::pow2("V", 1, 8).with_roles({"memory", "fusion"});
  EXPECT_EQ(knob.roles(), (Roles{"memory", "fusion"}));
  EXPECT_TRUE(knob.has_role("fusion"));
  EXPECT_FALSE(knob.has_role("compute"));

  Knob unchanged = Knob::boolean("B").with_roles({"compute"});
  try {
    unchanged.with_roles({"memory", "speed"});
    FAIL();
  } catch (const KnobDomainError& error) {
    EXPECT_EQ(error.field(), "roles[1]");
    EXPECT_EQ(error.problem(),
              "unknown role \"speed\" (expected one of memory, parallelism, compute, fusion, "
              "library)");
  }
  try {
    unchanged.with_roles({"memory", "compute", "memory"});
    FAIL();
  } catch (const KnobDomainError& error) {
    EXPECT_EQ(error.field(), "roles[2]");
    EXPECT_EQ(error.problem(), "duplicate role \"memory\"");
  }
  EXPECT_EQ(unchanged.roles(), Roles{"compute"});
}

TEST(KnobRoles, ParsedOnEveryKnobType) {
  const KnobSpace space = parse_knob_space(R"({"knobs": {
      "R": {"type": "int_range", "min": 1, "max": 4, "roles": ["parallelism"]},
      "P": {"type": "pow2", "min": 1, "max": 8, "roles": ["memory", "fusion"]},
      "S": {"type": "int_set", "values": [1, 3], "roles": []},
      "E": {"type": "enum", "values": ["x", "y"], "roles": ["library"]},
      "B": {"type": "bool", "default": true, "roles": ["compute"]},
      "N": {"type": "bool"}}})",
                                           "k.json");
  std::map<std::string, Roles> roles;
  for (const Knob& knob : space.knobs()) roles[knob.name()] = knob.roles();
  EXPECT_EQ(roles, (std::map<std::string, Roles>{{"R", {"parallelism"}},
                                                 {"P", {"memory", "fusion"}},
                                                 {"S", {}},
                                                 {"E", {"library"}},
                                                 {"B", {"compute"}},
                                                 {"N", {}}}));
  EXPECT_EQ(space.knobs()[4].default_index(), 1u);
}

TEST(KnobRoles, SpecErrorsNameTheField) {
  const auto error_of = [](const std::string& text) {
    return input_error_of([&] { parse_knob_space(text, "k.json"); });
  };
  EXPECT_EQ(error_of(R"({"knobs": {"B": {"type": "pow2", "min": 1, "max": 8,
                                         "roles": ["memory", "speed"]}}})"),
            "k.json: knobs.B.roles[1]: unknown role \"speed\" (expected one of memory, "
            "parallelism, compute, fusion, library)");
  EXPECT_EQ(error_of(R"({"knobs": {"B": {"type": "bool", "roles": ["fusion", "fusion"]}}})"),
            "k.json: knobs.B.roles[1]: duplicate role \"fusion\"");
  EXPECT_EQ(error_of(R"({"knobs": {"B": {"type": "bool", "roles": "memory"}}})"),
            "k.json: knobs.B.roles: expected array of strings, got string \"memory\"");
  EXPECT_EQ(error_of(R"({"knobs": {"B": {"type": "bool", "roles": [1]}}})"),
            "k.json: knobs.B.roles[0]: expected string, got integer 1");
  EXPECT_EQ(error_of(R"({"knobs": {"B": {"type": "bool", "role": ["memory"]}}})"),
            "k.json: knobs.B.role: unknown field (expected one of type, default, roles, "
            "trades_accuracy)");
}

TEST(KnobRoles, EveryShippedKnobHasItsRoles) {
  const std::map<std::string, std::map<std::string, Roles>> expected = {
      {"elementwise_cpu",
       {{"THREADS", {"parallelism"}}, {"CHUNK", {"parallelism"}}, {"SIMD", {"compute"}}}},
      {"fused_cpu",
       {{"THREADS", {"parallelism"}}, {"CHUNK", {"parallelism"}}, {"BLOCK", {"compute"}}}},
      {"fused_cuda",
       {{"BLOCK_THREADS", {"parallelism"}},
        {"VEC", {"memory"}},
        {"ITEMS", {"compute"}},
        {"ROW_MAPPING", {"parallelism"}},
        {"CACHE_VECS", {"memory", "fusion"}},
        {"TILE_M", {"compute", "memory"}},
        {"TILE_N", {"compute", "memory"}},
        {"TILE_K", {"memory"}},
        {"THREAD_M", {"compute"}},
        {"THREAD_N", {"compute"}},
        {"TENSOR_CORES", {"compute"}},
        {"MATMUL_LIBRARY", {"library"}}}},
      {"gemm_cpu",
       {{"MC", {"memory"}},
        {"NC", {"memory"}},
        {"KC", {"memory"}},
        {"MR", {"compute"}},
        {"NR", {"compute"}},
        {"THREADS", {"parallelism"}}}},
      {"rowreduce_cpu",
       {{"THREADS", {"parallelism"}},
        {"ROWS_PER_TASK", {"parallelism"}},
        {"PARALLEL_MIN_ELEMS", {"parallelism"}},
        {"SIMD_WIDTH", {"compute"}},
        {"CACHE_ROW", {"memory", "fusion"}}}},
      {"elementwise_cuda",
       {{"BLOCK_THREADS", {"parallelism"}},
        {"VEC", {"memory"}},
        {"ITEMS", {"compute"}},
        {"GRID_STRIDE", {"parallelism"}}}},
      {"gemm_cublaslt", {{"MODE", {"library"}}, {"HEURISTIC_RANK", {"library"}}}},
      {"gemm_mma",
       {{"BM", {"compute"}},
        {"BN", {"compute"}},
        {"BK", {"compute"}},
        {"WARPS_M", {"parallelism"}},
        {"WARPS_N", {"parallelism"}},
        {"STAGES", {"memory"}},
        {"SWIZZLE_GROUP", {"memory"}}}},
      {"gemm_wgmma",
       {{"BM", {"compute"}},
        {"BN", {"compute"}},
        {"STAGES", {"memory"}},
        {"RASTER", {"memory"}},
        {"CONSUMERS", {"parallelism"}},
        {"CLUSTER", {"memory"}}}},
      {"attention_cpu",
       {{"BLOCK_M", {"parallelism", "memory"}},
        {"BLOCK_N", {"memory"}},
        {"SIMD_WIDTH", {"compute"}},
        {"ROW_TILE", {"compute"}},
        {"QK_FORM", {"compute"}},
        {"STAGE_KV", {"memory"}},
        {"PREFETCH", {"memory"}},
        {"SCHEDULE", {"parallelism"}},
        {"THREADS", {"parallelism"}},
        {"PARALLEL_MIN_WORK", {"parallelism"}}}},
      {"attention_prefill",
       {{"BLOCK_M", {"parallelism", "compute"}},
        {"BLOCK_N", {"compute", "memory"}},
        {"WARPS", {"parallelism"}},
        {"STAGES", {"memory"}},
        {"Q_IN_REGS", {"memory"}},
        {"HEAD_PACK", {"parallelism", "memory"}},
        {"MIN_BLOCKS", {"parallelism"}}}},
      {"attention_prefill_wgmma",
       {{"BLOCK_N", {"compute", "memory"}},
        {"STAGES", {"memory"}},
        {"CONSUMERS", {"parallelism"}},
        {"PINGPONG", {"parallelism"}},
        {"TILES_PER_CTA", {"parallelism"}},
        {"CTAS_PER_SM", {"parallelism"}}}},
      {"attention_decode",
       {{"WARPS", {"parallelism"}},
        {"KTILE", {"memory", "compute"}},
        {"STAGES", {"memory"}},
        {"MATH", {"compute"}},
        {"CTAS_PER_SM", {"parallelism"}},
        {"MIN_SPLIT_TOKENS", {"parallelism"}},
        {"MAX_REGS", {"parallelism"}},
        {"COMBINE", {"fusion"}}}},
      {"attention_decode_nvfp4",
       {{"WARPS", {"parallelism"}},
        {"UNROLL", {"memory"}},
        {"DEQUANT", {"compute"}},
        {"CTAS_PER_SM", {"parallelism"}},
        {"MIN_SPLIT_TOKENS", {"parallelism"}},
        {"MAX_REGS", {"parallelism"}}}},
      {"moe_backward_cpu",
       {{"TOKEN_BLOCK", {"parallelism", "memory"}},
        {"N_BLOCK", {"memory", "parallelism"}},
        {"ROW_TILE", {"compute"}},
        {"COL_TILE", {"compute"}},
        {"SIMD_WIDTH", {"compute"}},
        {"THREADS", {"parallelism"}},
        {"PARALLEL_MIN_WORK", {"parallelism"}}}},
      {"moe_backward",
       {{"BM", {"compute", "parallelism"}},
        {"WARPS_M", {"parallelism"}},
        {"BN", {"compute", "parallelism"}},
        {"BK", {"compute", "memory"}},
        {"WARPS_N", {"parallelism"}},
        {"STAGES", {"memory"}},
        {"BN2", {"compute", "parallelism"}},
        {"BK2", {"compute", "memory"}},
        {"WARPS_N2", {"parallelism"}},
        {"STAGES2", {"memory"}},
        {"BM3", {"compute", "parallelism"}},
        {"BN3", {"compute", "parallelism"}},
        {"BK3", {"compute", "memory"}},
        {"WARPS_M3", {"parallelism"}},
        {"WARPS_N3", {"parallelism"}},
        {"STAGES3", {"memory"}},
        {"M_GROUP", {"memory"}}}},
      {"moe_cpu",
       {{"TOKEN_BLOCK", {"parallelism", "memory"}},
        {"N_BLOCK", {"memory"}},
        {"K_BLOCK", {"memory"}},
        {"ROW_TILE", {"compute"}},
        {"COL_TILE", {"compute"}},
        {"SIMD_WIDTH", {"compute"}},
        {"STAGE_W", {"memory"}},
        {"SPLIT", {"parallelism"}},
        {"THREADS", {"parallelism"}},
        {"PARALLEL_MIN_WORK", {"parallelism"}}}},
      {"moe_grouped",
       {{"BM", {"compute", "parallelism"}},
        {"WARPS_M", {"parallelism"}},
        {"BN", {"compute", "parallelism"}},
        {"BK", {"compute", "memory"}},
        {"WARPS_N", {"parallelism"}},
        {"STAGES", {"memory"}},
        {"BN2", {"compute", "parallelism"}},
        {"BK2", {"compute", "memory"}},
        {"WARPS_N2", {"parallelism"}},
        {"STAGES2", {"memory"}},
        {"M_GROUP", {"memory"}},
        {"ROUTER_TOKENS", {"memory", "parallelism"}},
        {"MATMUL_LIBRARY", {"library"}}}},
      {"moe_fp8_grouped",
       {{"BM", {"compute", "parallelism"}},
        {"WARPS_M", {"parallelism"}},
        {"BN", {"compute", "parallelism"}},
        {"BK", {"compute", "memory"}},
        {"WARPS_N", {"parallelism"}},
        {"STAGES", {"memory"}},
        {"BN2", {"compute", "parallelism"}},
        {"BK2", {"compute", "memory"}},
        {"WARPS_N2", {"parallelism"}},
        {"STAGES2", {"memory"}},
        {"M_GROUP", {"memory"}}}},
      {"mlp_gated",
       {{"FUSE_GATE_UP", {"fusion"}},
        {"BM", {"compute", "parallelism"}},
        {"WARPS_M", {"parallelism"}},
        {"BN", {"compute", "parallelism"}},
        {"BK", {"compute", "memory"}},
        {"WARPS_N", {"parallelism"}},
        {"STAGES", {"memory"}},
        {"M_GROUP", {"memory"}}}},
      {"scaled_gemm_cublaslt", {{"HEURISTIC_RANK", {"library"}}, {"FAST_ACCUM", {"library"}}}},
      {"scaled_gemm_mma",
       {{"BM", {"compute", "parallelism"}},
        {"BN", {"compute", "parallelism"}},
        {"BK", {"memory"}},
        {"WARPS_M", {"parallelism"}},
        {"WARPS_N", {"parallelism"}},
        {"STAGES", {"memory"}}}},
      {"scaled_gemm_wgmma",
       {{"BM", {"compute"}},
        {"BN", {"compute"}},
        {"STAGES", {"memory"}},
        {"CONSUMERS", {"parallelism"}},
        {"RASTER", {"memory"}},
        {"PROMOTE", {"compute"}},
        {"PINGPONG", {"parallelism"}},
        {"CLUSTER", {"memory"}}}},
      {"rope_cuda",
       {{"BLOCK_THREADS", {"parallelism"}},
        {"TOKENS_PER_BLOCK", {"parallelism"}},
        {"VEC", {"memory"}},
        {"HEAD_UNROLL", {"memory"}}}},
      {"transpose_cuda",
       {{"TILE", {"memory"}},
        {"VEC", {"memory"}},
        {"BLOCK_THREADS", {"parallelism"}},
        {"PAD", {"memory"}}}},
      {"rownorm_cuda",
       {{"ROW_MAPPING", {"parallelism"}},
        {"BLOCK_THREADS", {"parallelism"}},
        {"ROWS_PER_BLOCK", {"parallelism"}},
        {"VEC", {"memory"}},
        {"MAX_VECS_PER_THREAD", {"memory"}},
        {"PRELOAD_WEIGHT", {"memory"}},
        {"CACHE_ROW", {"memory", "fusion"}}}},
      {"rowsoftmax_cuda",
       {{"ROW_MAPPING", {"parallelism"}},
        {"ALGORITHM", {"compute"}},
        {"BLOCK_THREADS", {"parallelism"}},
        {"ROWS_PER_BLOCK", {"parallelism"}},
        {"VEC", {"memory"}},
        {"MAX_VECS_PER_THREAD", {"memory"}},
        {"CACHE_ROW", {"memory", "fusion"}}}},
  };
  const std::set<std::string> allowed(knob_role_names().begin(), knob_role_names().end());
  std::map<std::string, std::map<std::string, Roles>> shipped;
  for (const KernelTemplate& kernel :
       load_template_library(std::filesystem::path(KERNELARC_SOURCE_DIR) / "templates")) {
    for (const Knob& knob : kernel.knobs.knobs()) {
      EXPECT_FALSE(knob.roles().empty()) << kernel.name << "." << knob.name();
      for (const std::string& name : knob.roles())
        EXPECT_TRUE(allowed.contains(name)) << kernel.name << "." << knob.name() << ": " << name;
      shipped[kernel.name][knob.name()] = knob.roles();
    }
  }
  EXPECT_EQ(shipped, expected);
}

TEST(FilteredMoves, NeighboursChangeOnlyAdmittedKnobs) {
  const ConstrainedSpace space = roled_space();
  EXPECT_EQ(space.neighbours(point(2, 2, 0), role("memory")),
            (std::vector<KnobPoint>{point(2, 1, 0), point(2, 3, 0)}));
  EXPECT_EQ(space.neighbours(point(2, 2, 0), role("fusion")),
            (std::vector<KnobPoint>{point(2, 2, 1)}));
  EXPECT_EQ(space.neighbours(point(2, 2, 0), [](const Knob& knob) { return knob.name() != "b"; }),
            (std::vector<KnobPoint>{point(1, 2, 0), point(3, 2, 0), point(2, 2, 1)}));
  // An empty filter is no filter.
  EXPECT_EQ(space.neighbours(point(2, 2, 0), KnobFilter{}), space.neighbours(point(2, 2, 0)));
}

TEST(FilteredMoves, MutateChangesOnlyAdmittedKnobs) {
  const ConstrainedSpace space = roled_space();
  for (const std::string name : {"memory", "parallelism", "fusion"}) {
    Rng rng(21);
    KnobPoint current = point(1, 1, 0);
    std::set<std::string> changed;
    for (int i = 0; i < 200; ++i) {
      const std::optional<KnobPoint> next = space.mutate(current, rng, role(name));
      ASSERT_TRUE(next) << name << " from " << format_knob_point(current);
      EXPECT_TRUE(space.is_valid(*next));
      const std::set<std::string> step = changed_knobs(current, *next);
      EXPECT_EQ(step.size(), 1u) << format_knob_point(*next);
      changed.insert(step.begin(), step.end());
      current = *next;
    }
    const std::set<std::string> expected = name == "memory"        ? std::set<std::string>{"b"}
                                           : name == "parallelism" ? std::set<std::string>{"a"}
                                                                   : std::set<std::string>{"c"};
    EXPECT_EQ(changed, expected) << name;
  }
}

TEST(FilteredMoves, EmptyOrAdmitAllFilterDrawsLikeNoFilter) {
  const ConstrainedSpace space = roled_space();
  Rng plain(11), empty(11), all(11);
  KnobPoint current = point(1, 1, 0);
  for (int i = 0; i < 200; ++i) {
    const std::optional<KnobPoint> next = space.mutate(current, plain);
    ASSERT_TRUE(next);
    EXPECT_EQ(space.mutate(current, empty, KnobFilter{}), next);
    EXPECT_EQ(space.mutate(current, all, [](const Knob&) { return true; }), next);
    current = *next;
  }
  const uint64_t after = plain.next();
  EXPECT_EQ(empty.next(), after);
  EXPECT_EQ(all.next(), after);
}

TEST(FilteredMoves, AFilterAdmittingNothingMovesNothing) {
  const ConstrainedSpace space = roled_space();
  EXPECT_TRUE(space.neighbours(point(2, 2, 0), role("library")).empty());
  Rng rng(5);
  for (int i = 0; i < 20; ++i) EXPECT_FALSE(space.mutate(point(2, 2, 0), rng, role("library")));
  // Admitted knobs with no valid other value are as stuck: at a=2, b=3, c=1 breaks a + b <= 4.
  const auto only_c = [](const Knob& knob) { return knob.name() == "c"; };
  EXPECT_TRUE(space.neighbours(point(2, 3, 0), only_c).empty());
  EXPECT_FALSE(space.mutate(point(2, 3, 0), rng, only_c));
}

}  // namespace
}  // namespace kernelarc
