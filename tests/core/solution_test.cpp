#include <gtest/gtest.h>

#include "core/problem.h"
#include "test_support.h"

namespace kernelarc {
namespace {

using testing::fixture;
using testing::input_error_of;
using testing::TempDir;

constexpr const char* kSolution = R"({
  "name": "rmsnorm_cuda_v3",
  "definition": "rmsnorm_h4096",
  "author": "kernelarc",
  "description": "one warp per row",
  "spec": {
    "languages": ["cuda_cpp"],
    "target_hardware": ["NVIDIA_H200", "LOCAL"],
    "entry_point": "src/main.cu::ka_run",
    "compile_options": {"cuda_cflags": ["-O3", "--use_fast_math"], "ld_flags": ["-lcuda"]},
    "binding": "torch",
    "dependencies": ["CUTLASS_3_7"]
  },
  "sources": [
    {"path": "src/main.cu", "content": "extern \"C\" int ka_run() { return 0; }\n"},
    {"path": "src/kernel.h"}
  ],
  "kernelarc": {
    "workspace_bytes": "batch_size * 4",
    "launch": {"grid": ["batch_size", 1, 1], "block": [256], "shared_bytes": "hidden_size * 4"},
    "template": "rmsnorm/warp_per_row"
  }
})";

TEST(Solution, LoadsInlineAndBesideSources) {
  TempDir dir;
  dir.write("solution.json", kSolution);
  dir.write("src/kernel.h", "#pragma once\n");
  for (const auto& path : {dir.path(), dir / "solution.json"}) {
    const Solution solution = load_solution(path);
    EXPECT_EQ(solution.name, "rmsnorm_cuda_v3");
    EXPECT_EQ(solution.definition, "rmsnorm_h4096");
    EXPECT_EQ(solution.author, "kernelarc");
    EXPECT_EQ(solution.description, "one warp per row");
    EXPECT_EQ(solution.languages, (std::vector<std::string>{"cuda_cpp"}));
    EXPECT_EQ(solution.target_hardware, (std::vector<std::string>{"NVIDIA_H200", "LOCAL"}));
    EXPECT_EQ(solution.entry_file, "src/main.cu");
    EXPECT_EQ(solution.entry_symbol, "ka_run");
    EXPECT_TRUE(solution.destination_passing_style);
    EXPECT_TRUE(solution.cflags.empty());
    EXPECT_EQ(solution.cuda_cflags, (std::vector<std::string>{"-O3", "--use_fast_math"}));
    EXPECT_EQ(solution.ld_flags, (std::vector<std::string>{"-lcuda"}));
    EXPECT_EQ(solution.binding, "torch");
    ASSERT_EQ(solution.sources.size(), 2u);
    EXPECT_EQ(solution.sources[1].path, "src/kernel.h");
    EXPECT_EQ(solution.sources[1].content, "#pragma once\n");
    EXPECT_EQ(solution.ext["launch"]["block"][0], 256);
    EXPECT_EQ(solution.ext["template"], "rmsnorm/warp_per_row");
    EXPECT_EQ(solution.path, dir / "solution.json");
  }
}

TEST(Solution, AcceptsFlashInferLanguageAndRoundTripsThroughJson) {
  const OrderedJson json = OrderedJson::parse(R"({
    "name": "gemm_cpu", "definition": "gemm_n64", "spec": {"language": "cpp",
    "entry_point": "k.cpp::ka_run", "destination_passing_style": false},
    "sources": [{"path": "./k.cpp", "content": "int x;"}]})");
  const Solution solution = parse_solution(json, "inline.json", ".");
  EXPECT_EQ(solution.languages, (std::vector<std::string>{"cpp"}));
  EXPECT_EQ(solution.sources[0].path, "k.cpp");  // normal form
  EXPECT_FALSE(solution.destination_passing_style);
  EXPECT_TRUE(solution.ext.is_object());
  EXPECT_TRUE(solution.ext.empty());

  const OrderedJson exported = solution_to_json(solution);
  EXPECT_EQ(exported["spec"]["languages"], OrderedJson::array({"cpp"}));
  EXPECT_EQ(exported["spec"]["entry_point"], "k.cpp::ka_run");
  EXPECT_EQ(exported["sources"][0]["content"], "int x;");
  EXPECT_FALSE(exported.contains("kernelarc"));
  EXPECT_EQ(exported.begin().key(), "name");

  TempDir dir;
  dir.write("solution.json", kSolution);
  dir.write("src/kernel.h", "#pragma once\n");
  const Solution full = load_solution(dir.path());
  const OrderedJson full_json = solution_to_json(full);
  EXPECT_EQ(full_json["sources"][1]["content"], "#pragma once\n");  // inlined on export
  const Solution again = parse_solution(full_json, "again.json", "/nonexistent");
  EXPECT_EQ(solution_to_json(again), full_json);
  EXPECT_EQ(again.ext, full.ext);
  EXPECT_EQ(again.binding, "torch");
}

struct BadSolution {
  const char* file;
  const char* field;
  const char* problem;
};

class MalformedSolution : public ::testing::TestWithParam<BadSolution> {};

TEST_P(MalformedSolution, NamesFileFieldAndProblem) {
  const BadSolution& bad = GetParam();
  const auto path = fixture(std::string("malformed/solution/") + bad.file);
  const std::string message = input_error_of([&] { load_solution(path); });
  EXPECT_EQ(message.rfind(path.string() + ": ", 0), 0u) << message;
  EXPECT_NE(message.find(std::string(": ") + bad.field + ": "), std::string::npos) << message;
  EXPECT_NE(message.find(bad.problem), std::string::npos) << message;
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, MalformedSolution,
    ::testing::Values(
        BadSolution{"bad_entry_point.json", "spec.entry_point",
                    "expected \"file::symbol\" with exactly one \"::\", got \"kernel.cpp:ka_run\""},
        BadSolution{"entry_point_two_separators.json", "spec.entry_point",
                    "exactly one \"::\", got \"kernel.cpp::ns::ka_run\""},
        BadSolution{"path_dotdot.json", "sources[1].path",
                    "\"..\" is not allowed, got \"../secret.h\""},
        BadSolution{"absolute_path.json", "sources[1].path",
                    "expected a relative path, got \"/etc/passwd\""},
        BadSolution{"duplicate_source.json", "sources[1].path", "duplicate source \"kernel.cpp\""},
        BadSolution{"entry_not_in_sources.json", "spec.entry_point",
                    "the entry file \"main.cpp\" is not among the sources"},
        BadSolution{"languages_wrong_type.json", "spec.languages",
                    "expected array of strings, got string \"cpp\""},
        BadSolution{"launch_grid_too_long.json", "kernelarc.launch.grid",
                    "expected an array of 1 to 3 expressions, got 4 items"},
        BadSolution{"workspace_bad_expr.json", "kernelarc.workspace_bytes",
                    "\"batch_size * * 4\": at column 14: unexpected '*'"},
        BadSolution{"missing_spec.json", "spec", "missing required field"},
        BadSolution{"compile_options_wrong_type.json", "spec.compile_options.cflags",
                    "expected array of strings, got string \"-O3\""},
        BadSolution{"entry_point_null.json", "spec.entry_point", "expected string, got null"}));

TEST(Solution, MissingBesideFileIsNamed) {
  const auto path = fixture("malformed/solution/missing_source_file.json");
  const std::string message = input_error_of([&] { load_solution(path); });
  EXPECT_EQ(message, path.string() + ": sources[0].content: missing, and there is no file " +
                         fixture("malformed/solution/kernel.cpp").string() + " to read it from");
}

}  // namespace
}  // namespace kernelarc
