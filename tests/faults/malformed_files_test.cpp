// Fault: a malformed input file of each kind reaches the kernelarc executable: a problem's
// definition.json and workload.jsonl (through `eval`), a solution.json (`eval`), a template's
// knob spec (`templates list`) and an LLM configuration (`optimize --synth llm`). Each ends with
// exit code 2 and one message naming the file, the field or line, and what was expected. The
// loaders' own tests (tests/core, tests/synth, tests/llm) check the messages in detail; these
// check that the executable reports them as input errors.
#include <gtest/gtest.h>

#include "fault_test_support.h"

namespace kernelarc::faults {
namespace {

enum class Kind { Definition, Workload, Solution, Knobs, LlmConfig };

struct Malformed {
  Kind kind;
  const char* fixture;  ///< under tests/data/malformed
  const char* message;  ///< follows the file's path in the error ("" for none)
  const char* detail;   ///< must appear too
};

class MalformedFile : public FaultTest, public ::testing::WithParamInterface<Malformed> {
 protected:
  /// Puts the fixture where its kind belongs and runs the command that reads it; returns the
  /// path the message must name.
  fs::path place_and_run(Outcome& outcome) {
    const Malformed& bad = GetParam();
    const fs::path fixture = kData / "malformed" / bad.fixture;
    const fs::path problem = dir_ / "problem";
    const std::string workspace = (dir_ / "ws").string();
    const std::string rmsnorm = (kSource / "problems/cpu/rmsnorm_f32").string();
    const std::string naive = (kSource / "problems/cpu/rmsnorm_f32/solutions/naive").string();
    fs::path named;
    std::vector<std::string> arguments;
    switch (bad.kind) {
      case Kind::Definition:
        fs::create_directories(problem);
        fs::copy_file(fixture, problem / "definition.json");
        write_text(problem / "workload.jsonl", "{\"uuid\": \"w\", \"axes\": {}, \"inputs\": {}}\n");
        named = problem / "definition.json";
        arguments = {"eval", problem.string(), naive};
        break;
      case Kind::Workload:
        fs::create_directories(problem);
        fs::copy_file(kData / "malformed/workload/definition.json", problem / "definition.json");
        fs::copy_file(fixture, problem / "workload.jsonl");
        named = problem / "workload.jsonl";
        arguments = {"eval", problem.string(), naive};
        break;
      case Kind::Solution:
        named = fixture;
        arguments = {"eval", rmsnorm, fixture.string()};
        break;
      case Kind::Knobs: {
        const fs::path root = dir_ / "templates";
        fs::copy(kData / "templates/good", root, fs::copy_options::recursive);
        fs::copy_file(fixture, root / "cpu/toy/knobs.json", fs::copy_options::overwrite_existing);
        named = root / "cpu/toy/knobs.json";
        arguments = {"templates", "--root", root.string(), "list"};
        break;
      }
      case Kind::LlmConfig:
        named = fixture;
        arguments = {"optimize", rmsnorm, "--synth", "llm", "--llm-config", fixture.string()};
        break;
    }
    if (bad.kind != Kind::Knobs) arguments.insert(arguments.end(), {"--workspace", workspace});
    outcome = run_kernelarc(arguments, log("kernelarc"));
    return named;
  }
};

TEST_P(MalformedFile, ExitsTwoNamingTheFileTheFieldAndWhatWasExpected) {
  Outcome outcome;
  const fs::path named = place_and_run(outcome);
  EXPECT_EQ(outcome.exit_code, 2) << outcome.output;
  const std::string message = named.string() + GetParam().message;
  EXPECT_NE(outcome.output.find(message), std::string::npos)
      << "expected \"" << message << "\" in:\n"
      << outcome.output;
  EXPECT_NE(outcome.output.find(GetParam().detail), std::string::npos) << outcome.output;
  EXPECT_EQ(outcome.output.find("internal error"), std::string::npos) << outcome.output;
  // One message, not a usage text or a stack of them.
  EXPECT_LE(std::count(outcome.output.begin(), outcome.output.end(), '\n'), 2) << outcome.output;
}

INSTANTIATE_TEST_SUITE_P(
    Files, MalformedFile,
    ::testing::Values(
        Malformed{Kind::Definition, "definition/bad_json.json", ": invalid JSON", "line 5"},
        Malformed{Kind::Definition, "definition/missing_name.json",
                  ": name: ", "missing required field"},
        Malformed{Kind::Definition, "definition/axes_wrong_type.json",
                  ": axes: ", "expected object, got array"},
        Malformed{Kind::Definition, "definition/unknown_dtype.json",
                  ": inputs.weight.dtype: ", "expected one of float64"},
        Malformed{Kind::Definition, "definition/unknown_axis_in_shape.json",
                  ": inputs.x.shape[1]: ", "unknown axis \"hiden_size\""},
        Malformed{Kind::Workload, "workload/bad_json_line3.jsonl", ":3: ", "invalid JSON"},
        Malformed{Kind::Workload, "workload/unknown_axis.jsonl",
                  ":1: axes.seq_len: ", "the definition \"gqa_toy\" has no axis \"seq_len\""},
        Malformed{Kind::Workload, "workload/wrapped_missing_input.jsonl",
                  ":1: workload.inputs.scale: ", "missing input"},
        Malformed{Kind::Solution, "solution/missing_sources.json",
                  ": sources: ", "missing required field"},
        Malformed{Kind::Solution, "solution/bad_entry_point.json",
                  ": spec.entry_point: ", "expected \"file::symbol\""},
        Malformed{Kind::Knobs, "knobs/bad_json.json", ": invalid JSON", "line 3"},
        Malformed{Kind::Knobs, "knobs/unknown_type.json", ": knobs.UNROLL.type: ",
                  "expected one of int_range, pow2, int_set, enum, bool, got \"power_of_two\""},
        Malformed{Kind::Knobs, "knobs/min_wrong_type.json",
                  ": knobs.UNROLL.min: ", "expected integer, got string \"1\""},
        Malformed{Kind::Knobs, "knobs/enum_default_not_a_value.json",
                  ": knobs.MODE.default: ", "expected one of plain, fancy, got turbo"},
        Malformed{Kind::LlmConfig, "llm/bad_json.json", ": invalid JSON", "line 1"},
        Malformed{Kind::LlmConfig, "llm/unknown_provider.json",
                  ": models[0].provider: ", "expected \"openai\" or \"anthropic\", got \"openia\""},
        Malformed{Kind::LlmConfig, "llm/missing_model.json",
                  ": models[0].model: ", "missing required field"},
        Malformed{Kind::LlmConfig, "llm/negative_timeout.json",
                  ": models[0].timeout_s: ", "expected a positive number"},
        Malformed{Kind::LlmConfig, "llm/api_key_written.json",
                  ": models[0].api_key: ", "put the key in an environment variable"}));

TEST_F(FaultTest, AKeyWrittenInTheLlmConfigIsNeverPrinted) {
  const Outcome outcome =
      run_kernelarc({"optimize", (kSource / "problems/cpu/rmsnorm_f32").string(), "--synth", "llm",
                     "--llm-config", (kData / "malformed/llm/api_key_written.json").string(),
                     "--workspace", (dir_ / "ws").string()},
                    log("kernelarc"));
  EXPECT_EQ(outcome.exit_code, 2) << outcome.output;
  EXPECT_EQ(outcome.output.find("sk-do-not-store"), std::string::npos) << outcome.output;
}

}  // namespace
}  // namespace kernelarc::faults
