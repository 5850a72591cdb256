#include "synth/kernel_template.h"

#include <set>

#include <gtest/gtest.h>

#include "synth/bound_template.h"
#include "synth/representative_points.h"

namespace kernelarc {
namespace {

const std::filesystem::path kData = std::filesystem::path(KERNELARC_SOURCE_DIR) / "tests/data";

TEST(KernelTemplate, LoadsALibrary) {
  const auto library = load_template_library(kData / "templates/good");
  ASSERT_EQ(library.size(), 1u);
  const KernelTemplate& toy = library.front();
  EXPECT_EQ(toy.name, "toy_cpu");
  EXPECT_EQ(toy.target, DeviceKind::Cpu);
  EXPECT_TRUE(toy.serves("rmsnorm"));
  EXPECT_FALSE(toy.serves("softmax"));
  EXPECT_EQ(toy.build, TemplateBuild::SharedObject);
  EXPECT_EQ(toy.common, std::vector<std::string>{"shared.h"});
  EXPECT_EQ(toy.knobs.knobs().size(), 2u);
  EXPECT_EQ(toy.knobs.product_size(), 8u);
}

TEST(KernelTemplate, NamesTheFieldOfAMalformedTemplate) {
  try {
    load_template(kData / "templates/bad", kData / "templates/good/common");
    FAIL() << "expected an InputError";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("target"), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("\"gpu\""), std::string::npos) << error.what();
  }
}

TEST(KernelTemplate, RejectsAMissingLibrary) {
  EXPECT_THROW(load_template_library(kData / "templates/none"), InputError);
}

TEST(SubstituteNames, ReplacesWholeIdentifiersOnly) {
  const std::map<std::string, std::string> names{{"ROWS", "batch_size * seq"}, {"C", "4096"}};
  EXPECT_EQ(substitute_names("(ROWS + B - 1) // B", names), "((batch_size * seq) + B - 1) // B");
  EXPECT_EQ(substitute_names("ROWSX + C * 2 + 1e5", names), "ROWSX + (4096) * 2 + 1e5");
}

TEST(BoundTemplate, ExplainsWhyAProblemHasNoTemplate) {
  const auto library = load_template_library(kData / "templates/good");
  Problem problem;
  problem.definition.name = "mystery";
  problem.dir = "/p/mystery";
  EXPECT_NE(
      describe_no_template(library, problem, DeviceKind::Cpu).find("has no kernelarc.op_family"),
      std::string::npos);
  problem.definition.ext.op_family = "scan";
  const std::string message = describe_no_template(library, problem, DeviceKind::Cpu);
  EXPECT_NE(message.find("no cpu template serves op family \"scan\""), std::string::npos)
      << message;
  EXPECT_NE(message.find("rmsnorm"), std::string::npos) << message;
}

TEST(BoundTemplate, InstantiatesAProblemWithKnobsAndProvenance) {
  const auto library = load_template_library(kData / "templates/good");
  const Problem problem =
      load_problem(std::filesystem::path(KERNELARC_SOURCE_DIR) / "problems/cpu/rmsnorm_f32");
  const BoundTemplate bound(library.front(), problem);
  // float32 rows: MAX_ELEM_BYTES = 4, so UNROLL = 8 breaks the constraint.
  const KnobPoint too_wide = bound.space().space().parse_point("MODE=fancy,UNROLL=8");
  try {
    bound.instantiate(too_wide);
    FAIL() << "expected an InputError";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("UNROLL * MAX_ELEM_BYTES <= 16"), std::string::npos)
        << error.what();
  }
  const Solution solution =
      bound.instantiate(bound.space().space().parse_point("MODE=fancy,UNROLL=2"));
  EXPECT_EQ(solution.definition, problem.definition.name);
  EXPECT_EQ(solution.ext["knobs"]["UNROLL"], 2);
  EXPECT_EQ(solution.ext["knobs"]["MODE"], 1);
  EXPECT_EQ(solution.ext["template"]["point"], "MODE=fancy,UNROLL=2");
  std::vector<std::string> paths;
  for (const SourceFile& source : solution.sources) paths.push_back(source.path);
  EXPECT_EQ(paths, (std::vector<std::string>{"main.cpp", "shared.h", "ka_problem.h"}));
  EXPECT_NE(solution.sources.back().content.find("#define KA_MODE_fancy 1"), std::string::npos);
  EXPECT_EQ(bound.infeasible(bound.space().space().default_point()), std::nullopt);
}

TEST(BoundTemplate, AConstraintOnSharedBytesReadsTheLaunchsFormula) {
  const auto library = load_template_library(kData / "templates/good");
  const Problem problem =
      load_problem(std::filesystem::path(KERNELARC_SOURCE_DIR) / "problems/cpu/rmsnorm_f32");
  KernelTemplate kernel = library.front();
  kernel.knobs = KnobSpace(kernel.knobs.knobs(), {"SHARED_BYTES <= 3000"});
  kernel.launch = {{"grid", {1}}, {"block", {1}}, {"shared_bytes", "UNROLL * 1000"}};
  const BoundTemplate bound(kernel, problem);
  const KnobSpace& space = bound.space().space();
  EXPECT_TRUE(bound.space().is_valid(space.parse_point("MODE=fancy,UNROLL=2")));
  EXPECT_FALSE(bound.space().is_valid(space.parse_point("MODE=fancy,UNROLL=4")));
  try {
    bound.instantiate(space.parse_point("MODE=fancy,UNROLL=4"));
    FAIL() << "expected an InputError";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("(UNROLL * 1000) <= 3000"), std::string::npos)
        << error.what();
  }

  kernel.launch.erase("shared_bytes");
  try {
    BoundTemplate unbound(kernel, problem);
    FAIL() << "expected an InputError";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("its launch has no shared_bytes"), std::string::npos)
        << error.what();
  }
}

TEST(RepresentativePoints, PinnedKnobsHoldTheirValuesAtEveryPoint) {
  const auto library = load_template_library(kData / "templates/good");
  const Problem problem =
      load_problem(std::filesystem::path(KERNELARC_SOURCE_DIR) / "problems/cpu/rmsnorm_f32");
  const BoundTemplate bound(library.front(), problem);
  const auto free = representative_points(bound, 8, 1);
  std::set<std::string> modes;
  for (const KnobPoint& point : free.points) modes.insert(knob_value_text(point.at("MODE")));
  ASSERT_GT(modes.size(), 1u) << "the toy space should show both modes unpinned";

  const auto pinned = representative_points(bound, 8, 1, parse_knob_point("MODE=fancy"));
  ASSERT_GE(pinned.points.size(), 2u);
  std::set<std::string> seen;
  for (const KnobPoint& point : pinned.points) {
    EXPECT_EQ(knob_value_text(point.at("MODE")), "fancy") << format_knob_point(point);
    EXPECT_TRUE(seen.insert(format_knob_point(point)).second) << format_knob_point(point);
  }
  // A pin no valid point holds (float32 rows allow UNROLL <= 4) leaves nothing to sweep.
  const auto impossible = representative_points(bound, 8, 1, parse_knob_point("UNROLL=8"));
  EXPECT_TRUE(impossible.points.empty());
  EXPECT_FALSE(impossible.skipped.empty());
}

}  // namespace
}  // namespace kernelarc
