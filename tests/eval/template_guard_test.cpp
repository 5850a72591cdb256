// Every template of the bundled library, on every built-in problem of its family, passes the
// guard at several knob points (synth/representative_points.h): the CPU templates here, the CUDA
// templates on a GPU (suite Gpu*, label gpu). Without a GPU the CUDA templates are still compiled
// (NVRTC for device-only kernels at every point, nvcc for host-code templates at their default
// point), so a template that does not build fails in CI, nor does one whose wgmmas ptxas
// serialises. Routes a template's default and representative points may miss are pinned with a
// problem that takes them (pinned_cases): compiled in CI, guarded on a GPU.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <future>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ostream.h>

#include "backend/cuda/cuda_device.h"
#include "eval/guard_harness.h"
#include "eval/solution_build.h"
#include "source_dir.h"
#include "synth/bound_template.h"
#include "synth/knob_point.h"
#include "synth/representative_points.h"

namespace kernelarc {
namespace {

struct TemplateCase {
  std::string template_name;
  std::filesystem::path problem_dir;
};

std::ostream& operator<<(std::ostream& out, const TemplateCase& c) {
  return out << c.template_name << " on " << c.problem_dir.filename().string();
}

const std::vector<KernelTemplate>& library() {
  static const std::vector<KernelTemplate> templates = load_template_library(kSource / "templates");
  return templates;
}

const KernelTemplate& find_template(const std::string& name) {
  for (const KernelTemplate& kernel : library())
    if (kernel.name == name) return kernel;
  throw std::runtime_error("no template " + name);
}

/// Every (template, problem) pair of one target where the template serves the problem (its op
/// family, and its binder accepts the problem: a column sum is of the "reduce" family, which the
/// row templates serve only over the last axis), by template. Each problem is read and matched
/// once: every process of this binary, one per test under ctest, lists the cases first, and
/// reading each problem once per template cost each of them 0.25 s.
std::vector<TemplateCase> cases(const std::string& target) {
  const DeviceKind kind = *device_kind_from_name(target);
  std::vector<std::filesystem::path> problems;
  for (const auto& entry : std::filesystem::directory_iterator(kSource / "problems" / target))
    if (std::filesystem::exists(entry.path() / "definition.json")) problems.push_back(entry.path());
  std::sort(problems.begin(), problems.end());
  std::vector<std::set<std::string>> bound(problems.size());  // template names, by problem
  for (std::size_t i = 0; i < problems.size(); ++i) {
    const Problem problem = load_problem(problems[i]);
    for (const TemplateMatch& match : match_templates(library(), problem, kind))
      if (match.bound && match.kernel->serves(problem.definition.ext.op_family))
        bound[i].insert(match.kernel->name);
  }
  std::vector<TemplateCase> result;
  for (const KernelTemplate& kernel : library()) {
    if (kernel.target != kind) continue;
    for (std::size_t i = 0; i < problems.size(); ++i)
      if (bound[i].contains(kernel.name)) result.push_back({kernel.name, problems[i]});
  }
  return result;
}

/// A gtest name from `text`: every character but letters and digits becomes '_'.
std::string test_name(std::string text) {
  for (char& c : text)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return text;
}

std::string case_name(const ::testing::TestParamInfo<TemplateCase>& info) {
  return test_name(info.param.template_name + "__" + info.param.problem_dir.filename().string());
}

/// One harness per problem for the whole run, so the oracle's inputs and expected outputs are made
/// once per problem rather than once per template.
testing::GuardHarness& harness_for(const std::filesystem::path& problem_dir,
                                   const std::string& device) {
  static std::map<std::string, std::unique_ptr<testing::GuardHarness>> harnesses;
  auto& harness = harnesses[device + ":" + problem_dir.string()];
  if (!harness) {
    harness =
        std::make_unique<testing::GuardHarness>(problem_dir, device, [](GuardOptions& options) {
          options.correctness_trials = 2;
          options.warmup = 1;
          options.iterations = 5;
          options.timing_budget_s = 0.05;
          options.call_timeout = std::chrono::milliseconds(20000);
          options.time_baselines = false;
          options.auto_calibrate = false;  // calibrated once where a test needs the floor
        });
  }
  return *harness;
}

/// KERNELARC_TEMPLATE_POINTS=default limits the points to each template's default (for a quick
/// pass on a GPU machine with little time); unset, every test point runs.
bool default_point_only() {
  const char* value = std::getenv("KERNELARC_TEMPLATE_POINTS");
  return value != nullptr && std::string(value) == "default";
}

/// The guard on every workload at each of `points`; a failure names the point and the workload.
void expect_passes_at(testing::GuardHarness& harness, const TemplateCase& c,
                      const BoundTemplate& bound, const std::vector<KnobPoint>& points) {
  std::vector<Solution> solutions;
  for (const KnobPoint& point : points) solutions.push_back(bound.instantiate(point));
  // The nvcc-built GEMM templates take 30-60 s per point: compiling every point at once (as a
  // search compiles ahead) keeps the GPU pass of the whole library within a device session.
  harness.guard().prepare_builds();
  std::vector<std::future<bool>> builds;
  for (const Solution& solution : solutions) {
    builds.push_back(std::async(std::launch::async, [&harness, &solution] {
      return harness.guard().prebuild(harness.problem().definition, solution);
    }));
  }
  for (auto& build : builds) build.get();  // a failed build is reported by evaluate() below
  for (std::size_t i = 0; i < solutions.size(); ++i) {
    const KnobPoint& point = points[i];
    const Solution& solution = solutions[i];
    const auto traces =
        harness.guard().evaluate(harness.problem(), solution, harness.problem().workloads);
    for (const Trace& trace : traces) {
      EXPECT_EQ(trace.status, EvalStatus::Passed)
          << c << " at " << format_knob_point(point) << ", workload "
          << trace.workload.value("uuid", std::string("?")) << ": " << trace.log;
    }
  }
}

/// The default point is what the quick GPU pass runs, and a search's first candidate.
void expect_default_point_runs(const BoundTemplate& bound) {
  const KnobPoint default_point = bound.space().space().default_point();
  ASSERT_TRUE(bound.space().is_valid(default_point)) << "the default point must be valid";
  ASSERT_EQ(bound.infeasible(default_point), std::nullopt)
      << "the default point must run on every workload";
}

/// The guard on every workload at every test point.
void expect_passes_everywhere(const TemplateCase& c, const std::string& device) {
  testing::GuardHarness& harness = harness_for(c.problem_dir, device);
  const BoundTemplate bound(find_template(c.template_name), harness.problem());
  ASSERT_NO_FATAL_FAILURE(expect_default_point_runs(bound));
  const KnobPoint default_point = bound.space().space().default_point();
  auto selection = representative_points(bound, 1, 7);
  if (default_point_only()) selection.points = {default_point};
  for (const std::string& skipped : selection.skipped) std::cout << "  skipped " << skipped << '\n';
  expect_passes_at(harness, c, bound, selection.points);
}

class CpuTemplateGuard : public ::testing::TestWithParam<TemplateCase> {};

TEST_P(CpuTemplateGuard, PassesAtSeveralKnobPoints) {
  expect_passes_everywhere(GetParam(), "cpu");
}

INSTANTIATE_TEST_SUITE_P(Library, CpuTemplateGuard, ::testing::ValuesIn(cases("cpu")), case_name);

class GpuTemplateGuard : public ::testing::TestWithParam<TemplateCase> {};

TEST_P(GpuTemplateGuard, PassesAtSeveralKnobPoints) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  expect_passes_everywhere(GetParam(), "cuda:0");
}

INSTANTIATE_TEST_SUITE_P(GpuLibrary, GpuTemplateGuard, ::testing::ValuesIn(cases("cuda")),
                         case_name);

/// The default point and, for each two-valued knob that switches a route (roles "library" or
/// "fusion"), the default with it switched where that is valid: an nvcc build takes 10-60 s, so
/// the routes' code is compiled, not every test point.
std::vector<KnobPoint> route_points(const BoundTemplate& bound) {
  const KnobSpace& space = bound.space().space();
  const KnobPoint start = space.default_point();
  std::vector<KnobPoint> points = {start};
  for (const Knob& knob : space.knobs()) {
    if (knob.size() != 2 || !(knob.has_role("library") || knob.has_role("fusion"))) continue;
    KnobPoint switched = start;
    switched[knob.name()] = knob.value_at(1 - knob.default_index());
    if (bound.space().is_valid(switched)) points.push_back(switched);
  }
  return points;
}

/// `point` of `bound` compiles for sm_90 (`label` names it in failures) and ptxas serialises none
/// of its wgmmas.
void expect_builds(const BoundTemplate& bound, const Problem& problem, const KnobPoint& point,
                   const std::string& label) {
  GuardOptions options;
  options.device = "cuda:0";
  options.workspace = testing::harness_workspace();
  const BuildResult built =
      build_solution(bound.instantiate(point), problem.definition, options, "sm_90");
  EXPECT_TRUE(built.ok) << label << ":\n" << built.log;
  // ptxas serialises every wgmma of a kernel when it must insert a warpgroup arrive in a path
  // it takes for divergent (C7520): correct, but several times slower. The build of a wgmma
  // solution asks for ptxas's report (-Xptxas=-v) and keeps its remarks as notes.
  for (const std::string& note : built.notes)
    EXPECT_EQ(note.find("C7520"), std::string::npos) << label << ": " << note;
  std::error_code ignored;
  std::filesystem::remove_all(options.workspace, ignored);
}

/// No GPU needed: the CUDA templates compile for sm_90 at their test points.
class CudaTemplateBuild : public ::testing::TestWithParam<TemplateCase> {};

TEST_P(CudaTemplateBuild, CompilesAtItsTestPoints) {
  const TemplateCase& c = GetParam();
  const Problem problem = load_problem(c.problem_dir);
  const KernelTemplate& kernel = find_template(c.template_name);
  const BoundTemplate bound(kernel, problem);
  ASSERT_NO_FATAL_FAILURE(expect_default_point_runs(bound));
  const auto points = kernel.build == TemplateBuild::Nvrtc
                          ? representative_points(bound, 1, 7).points
                          : route_points(bound);
  ASSERT_FALSE(points.empty());
  for (const KnobPoint& point : points)
    expect_builds(bound, problem, point,
                  fmt::format("{} at {}", fmt::streamed(c), format_knob_point(point)));
}

INSTANTIATE_TEST_SUITE_P(Library, CudaTemplateBuild, ::testing::ValuesIn(cases("cuda")), case_name);

/// Routes of a template that its default point does not take and its representative points may
/// miss, each with a problem that exercises it: the quick GPU pass (default points) runs them
/// too, and CI compiles them.
struct PinnedCase {
  TemplateCase c;
  std::string knobs;  ///< over the template's default point
};

std::ostream& operator<<(std::ostream& out, const PinnedCase& pinned) {
  return out << pinned.c << " at " << pinned.knobs;
}

std::vector<PinnedCase> pinned_cases() {
  auto at = [](const char* template_name, const char* problem, const char* knobs) {
    return PinnedCase{{template_name, kSource / "problems" / "cuda" / problem}, knobs};
  };
  return {
      // Three consumers and two tiles a CTA (double-buffered Q, the ring running on).
      at("attention_prefill_wgmma", "attention_prefill_bf16_h32_kv8_d64",
         "CONSUMERS=3,TILES_PER_CTA=2,STAGES=2"),
      // The n176 score tile, with the consumers in turns.
      at("attention_prefill_wgmma", "attention_prefill_bf16_h28_kv4_d128_noncausal",
         "BLOCK_N=176,STAGES=2,PINGPONG=1"),
      // Several tiles a CTA through a page table and through ragged sequences (the item count
      // there is an upper bound: the first items have no rows).
      at("attention_prefill_wgmma", "gqa_paged_prefill_causal_h32_kv8_d128_ps1",
         "TILES_PER_CTA=4,STAGES=2"),
      at("attention_prefill_wgmma", "gqa_ragged_prefill_causal_h32_kv8_d128",
         "TILES_PER_CTA=2,STAGES=2"),
      // One consumer, several CTAs a multiprocessor (the register split under a launch bound
      // of 2 and 3 blocks): head dim 64 at both, head dim 128 with 64-key tiles.
      at("attention_prefill_wgmma", "attention_prefill_bf16_h32_kv8_d64",
         "CONSUMERS=1,CTAS_PER_SM=2,STAGES=2"),
      at("attention_prefill_wgmma", "attention_prefill_bf16_h32_kv8_d64",
         "CONSUMERS=1,CTAS_PER_SM=3,BLOCK_N=64,STAGES=2"),
      at("attention_prefill_wgmma", "attention_causal_bf16_h32_d128",
         "CONSUMERS=1,CTAS_PER_SM=2,BLOCK_N=64,STAGES=2"),
      // The three-stage ring at head dim 128, which fills the block's shared memory where no
      // page table takes its share (the default point has two stages, which every layout fits).
      at("attention_prefill_wgmma", "attention_prefill_bf16_h28_kv4_d128_noncausal", "STAGES=3"),
  };
}

std::string pinned_name(const ::testing::TestParamInfo<PinnedCase>& info) {
  return test_name(info.param.c.template_name + "__" +
                   info.param.c.problem_dir.filename().string() + "__" + info.param.knobs);
}

/// `knobs` ("K=V,...") over the template's default point (the callers check that it is valid).
KnobPoint over_default(const BoundTemplate& bound, const std::string& knobs) {
  KnobPoint point = bound.space().space().default_point();
  for (const auto& [knob, value] : parse_knob_point(knobs)) point[knob] = value;
  return point;
}

class CudaTemplateBuildPinned : public ::testing::TestWithParam<PinnedCase> {};

TEST_P(CudaTemplateBuildPinned, CompilesWithoutSerialisedWgmmas) {
  const PinnedCase& pinned = GetParam();
  const Problem problem = load_problem(pinned.c.problem_dir);
  const BoundTemplate bound(find_template(pinned.c.template_name), problem);
  const KnobPoint point = over_default(bound, pinned.knobs);
  ASSERT_TRUE(bound.space().is_valid(point)) << pinned << " is not a valid point";
  expect_builds(bound, problem, point, fmt::format("{}", fmt::streamed(pinned)));
}

INSTANTIATE_TEST_SUITE_P(Library, CudaTemplateBuildPinned, ::testing::ValuesIn(pinned_cases()),
                         pinned_name);

// Two 64-row CTAs of head dim 128 fit a multiprocessor's 228 KiB with 64-key tiles in two stages
// (80 KiB each), not with 128-key tiles (144 KiB) nor three stages (112 KiB and their 1 KiB
// reserve): the per-multiprocessor limit, not the per-block one, is what rules those out.
TEST(TemplateSpace, SeveralCtasAMultiprocessorMustFitItsSharedMemory) {
  const Problem problem =
      load_problem(kSource / "problems" / "cuda" / "attention_causal_bf16_h32_d128");
  const BoundTemplate bound(find_template("attention_prefill_wgmma"), problem);
  auto point = [&](const std::string& knobs) { return over_default(bound, knobs); };
  EXPECT_TRUE(bound.space().is_valid(point("CONSUMERS=1,CTAS_PER_SM=2,BLOCK_N=64,STAGES=2")));
  EXPECT_TRUE(bound.space().is_valid(point("CONSUMERS=1,CTAS_PER_SM=1,BLOCK_N=128,STAGES=3")));
  EXPECT_FALSE(bound.space().is_valid(point("CONSUMERS=1,CTAS_PER_SM=2,BLOCK_N=128,STAGES=2")));
  EXPECT_FALSE(bound.space().is_valid(point("CONSUMERS=1,CTAS_PER_SM=2,BLOCK_N=64,STAGES=3")));
  EXPECT_FALSE(bound.space().is_valid(point("CONSUMERS=2,CTAS_PER_SM=2,BLOCK_N=64,STAGES=2")));
}

// A paged cache's row table (two tiles of row offsets) takes shared memory only where the cache
// is paged: at head dim 128 the three-stage ring fits a dense problem and not a paged one.
TEST(TemplateSpace, OnlyAPagedCacheTakesSharedMemoryForItsRowTable) {
  for (const auto& [problem_name, fits] :
       {std::pair{"attention_causal_bf16_h32_d128", true},
        std::pair{"gqa_paged_prefill_causal_h32_kv8_d128_ps1", false}}) {
    const Problem problem = load_problem(kSource / "problems" / "cuda" / problem_name);
    const BoundTemplate bound(find_template("attention_prefill_wgmma"), problem);
    EXPECT_EQ(bound.space().is_valid(over_default(bound, "STAGES=3")), fits) << problem_name;
    EXPECT_TRUE(bound.space().is_valid(over_default(bound, "STAGES=2"))) << problem_name;
  }
}

class GpuTemplateGuardPinned : public ::testing::TestWithParam<PinnedCase> {};

TEST_P(GpuTemplateGuardPinned, PassesOnEveryWorkload) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const PinnedCase& pinned = GetParam();
  testing::GuardHarness& harness = harness_for(pinned.c.problem_dir, "cuda:0");
  const BoundTemplate bound(find_template(pinned.c.template_name), harness.problem());
  const KnobPoint point = over_default(bound, pinned.knobs);
  ASSERT_TRUE(bound.space().is_valid(point)) << pinned << " is not a valid point";
  expect_passes_at(harness, pinned.c, bound, {point});
}

INSTANTIATE_TEST_SUITE_P(GpuLibrary, GpuTemplateGuardPinned, ::testing::ValuesIn(pinned_cases()),
                         pinned_name);

}  // namespace
}  // namespace kernelarc
