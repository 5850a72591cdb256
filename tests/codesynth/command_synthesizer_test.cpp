// The command synthesizer: the request a program reads, the answers it may give, and every way
// it can fail, with small /bin/sh scripts as the programs.
#include "codesynth/command_synthesizer.h"

#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "codesynth/synthesis_request_json.h"
#include "core/test_support.h"

namespace kernelarc {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

constexpr const char* kDefinition = R"({
  "name": "scale_rows",
  "op_type": "elementwise",
  "axes": {"rows": {"type": "var"}, "cols": {"type": "const", "value": 4}},
  "inputs": {"x": {"shape": ["rows", "cols"], "dtype": "float32"}},
  "outputs": {"out": {"shape": ["rows", "cols"], "dtype": "float32"}},
  "reference": "def run(x):\n    return x * 2\n"
})";

constexpr const char* kWorkloads =
    R"({"uuid": "small", "axes": {"rows": 2}, "inputs": {"x": {"type": "random"}}})"
    "\n"
    R"({"uuid": "large", "axes": {"rows": 64}, "inputs": {"x": {"type": "random"}}})"
    "\n";

CandidateContext parent_candidate() {
  CandidateContext parent;
  parent.candidate_id = 17;
  parent.solution.name = "scale_rows__template_abc";
  parent.solution.definition = "scale_rows";
  parent.solution.languages = {"cpp"};
  parent.solution.target_hardware = {"cpu"};
  parent.solution.entry_file = "main.cpp";
  parent.solution.entry_symbol = "ka_run";
  parent.solution.cflags = {"-O2"};
  parent.solution.ld_flags = {"-lm"};
  parent.solution.sources = {{"main.cpp", "// the parent\nint ka_run();\n"}};
  parent.solution.ext = {{"knobs", {{"BLOCK", 4}}}};
  parent.status = EvalStatus::Passed;
  parent.results = "small 1.0 us";
  parent.diagnosis = "memory bound";
  parent.log = "";
  return parent;
}

class CommandSynthesizerTest : public ::testing::Test {
 protected:
  CommandSynthesizerTest() {
    temp_.write("problem/definition.json", kDefinition);
    temp_.write("problem/workload.jsonl", kWorkloads);
    problem_ = load_problem(temp_ / "problem");
  }

  SynthesisRequest request(bool with_parent = true) const {
    SynthesisRequest request;
    request.problem = &problem_;
    request.device = "cpu";
    request.hardware = "8 cores";
    request.agent = "explorer";
    request.strategy = "vectorize";
    request.move = with_parent ? SynthesisMove::Improve : SynthesisMove::Draft;
    if (with_parent) request.parent = parent_candidate();
    request.inspirations = {parent_candidate()};
    request.knowledge = {"use AVX2"};
    request.board = {"tiling helps"};
    request.recent_failures = {"candidate 12: COMPILE_ERROR"};
    request.seed = 42;
    return request;
  }

  /// An executable /bin/sh script in the temp dir, run there.
  std::string script(const std::string& name, const std::string& body) const {
    const fs::path path = temp_.write(name, "#!/bin/sh\n" + body + "\n");
    fs::permissions(path, fs::perms::owner_all);
    return path.string();
  }

  SynthesisOutcome run(std::vector<std::string> argv, double timeout_s = 10,
                       std::size_t max_output_bytes = std::size_t{1} << 20) const {
    CommandSynthesizer synthesizer({std::move(argv), timeout_s, max_output_bytes, temp_.path()});
    return synthesizer.synthesize(request());
  }

  std::string read(const std::string& name) const {
    std::ifstream file(temp_ / name, std::ios::binary);
    return {std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
  }

  TempDir temp_;
  Problem problem_;
};

TEST(SynthesisRequestJson, HoldsTheRequestAndTheParentsSources) {
  TempDir temp;
  temp.write("definition.json", kDefinition);
  temp.write("workload.jsonl", kWorkloads);
  const Problem problem = load_problem(temp.path());
  SynthesisRequest request;
  request.problem = &problem;
  request.device = "cuda:0";
  request.agent = "repairer";
  request.move = SynthesisMove::Repair;
  request.parent = parent_candidate();
  request.parent->status = EvalStatus::CompileError;
  request.parent->log = "main.cpp:1: error";
  request.seed = 7;

  const nlohmann::json json = synthesis_request_to_json(request);
  EXPECT_EQ(json["protocol"], 1);
  EXPECT_EQ(json["problem"]["name"], "scale_rows");
  EXPECT_EQ(json["problem"]["axes"]["cols"]["value"], 4);
  EXPECT_EQ(json["workloads"],
            nlohmann::json::parse(R"([{"rows": 2, "cols": 4}, {"rows": 64, "cols": 4}])"));
  EXPECT_EQ(json["device"], "cuda:0");
  EXPECT_EQ(json["agent"], "repairer");
  EXPECT_EQ(json["move"], "repair");
  EXPECT_EQ(json["seed"], 7);
  EXPECT_EQ(json["parent"]["candidate_id"], 17);
  EXPECT_EQ(json["parent"]["status"], "COMPILE_ERROR");
  EXPECT_EQ(json["parent"]["log"], "main.cpp:1: error");
  EXPECT_EQ(json["parent"]["diagnosis"], "memory bound");
  EXPECT_EQ(json["parent"]["solution"]["spec"]["entry_point"], "main.cpp::ka_run");
  EXPECT_EQ(json["parent"]["solution"]["sources"][0]["content"], "// the parent\nint ka_run();\n");
  EXPECT_EQ(json["inspirations"], nlohmann::json::array());

  request.parent.reset();
  EXPECT_TRUE(synthesis_request_to_json(request)["parent"].is_null());
}

TEST_F(CommandSynthesizerTest, GoodAnswerBecomesASolutionOnTheParentsMetadata) {
  const std::string program = script("good.sh", R"(cat > /dev/null
cat <<'JSON'
{"sources": [{"path": "main.cpp", "content": "int ka_run() { return 0; }\n"},
             {"path": "util.h", "content": "#pragma once\n"}],
 "cflags": ["-O3", "-march=native"], "description": "unrolled"}
JSON)");
  const SynthesisOutcome outcome = run({program});
  ASSERT_TRUE(outcome.solution) << outcome.failure;
  EXPECT_EQ(outcome.failure, "");
  const Solution& solution = *outcome.solution;
  EXPECT_EQ(solution.entry_file, "main.cpp");
  EXPECT_EQ(solution.entry_symbol, "ka_run");
  EXPECT_EQ(solution.languages, std::vector<std::string>{"cpp"});
  ASSERT_EQ(solution.sources.size(), 2u);
  EXPECT_EQ(solution.sources[0].path, "main.cpp");
  EXPECT_EQ(solution.sources[0].content, "int ka_run() { return 0; }\n");
  EXPECT_EQ(solution.sources[1].path, "util.h");
  EXPECT_EQ(solution.cflags, (std::vector<std::string>{"-O3", "-march=native"}));
  EXPECT_EQ(solution.ld_flags, std::vector<std::string>{"-lm"});  // the parent's, kept
  EXPECT_EQ(solution.description, "unrolled");
  EXPECT_EQ(solution.ext["knobs"]["BLOCK"], 4);
  EXPECT_EQ(solution.ext["synthesized"]["synthesizer"], "command");
  EXPECT_EQ(solution.ext["synthesized"]["parent_candidate"], 17);
  EXPECT_TRUE(solution.name.starts_with("scale_rows__command_")) << solution.name;

  ASSERT_EQ(outcome.exchanges.size(), 1u);
  EXPECT_EQ(outcome.exchanges[0].model, program);
  EXPECT_NE(outcome.exchanges[0].response.find("\"unrolled\""), std::string::npos);
  EXPECT_EQ(nlohmann::json::parse(outcome.exchanges[0].request)["agent"], "explorer");
}

TEST_F(CommandSynthesizerTest, ErrorAnswerIsAFailureWithItsText) {
  const SynthesisOutcome outcome =
      run({script("refuse.sh", R"(echo '{"error": "no idea how to vectorize this"}')")});
  EXPECT_FALSE(outcome.solution);
  EXPECT_NE(outcome.failure.find("reported an error: no idea how to vectorize this"),
            std::string::npos)
      << outcome.failure;
  ASSERT_EQ(outcome.exchanges.size(), 1u);
  EXPECT_EQ(outcome.exchanges[0].response, "{\"error\": \"no idea how to vectorize this\"}\n");
}

TEST_F(CommandSynthesizerTest, NonZeroExitIsAFailureQuotingStderr) {
  const SynthesisOutcome outcome = run({script(
      "exit3.sh", R"(echo '{"sources": []}'; echo "model server refused the key" >&2; exit 3)")});
  EXPECT_FALSE(outcome.solution);
  EXPECT_NE(outcome.failure.find("exited with status 3"), std::string::npos) << outcome.failure;
  EXPECT_NE(outcome.failure.find("model server refused the key"), std::string::npos)
      << outcome.failure;
  // stdout and stderr are kept apart: the answer does not hold the diagnostics.
  EXPECT_EQ(outcome.exchanges.at(0).response, "{\"sources\": []}\n");
}

TEST_F(CommandSynthesizerTest, KilledBySignalIsAFailure) {
  const SynthesisOutcome outcome = run({script("crash.sh", "kill -SEGV $$")});
  EXPECT_FALSE(outcome.solution);
  EXPECT_NE(outcome.failure.find("killed by signal SIGSEGV"), std::string::npos) << outcome.failure;
}

/// Whether the process is gone (or a zombie, dead but not yet reaped by init), waiting up to a
/// second for the SIGKILL to land.
bool process_ends(pid_t pid) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!std::getline(stat, line)) return true;
    const auto state = line.find(") ");
    if (state != std::string::npos && line[state + 2] == 'Z') return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

TEST_F(CommandSynthesizerTest, TimeoutKillsTheWholeProcessGroup) {
  const SynthesisOutcome outcome =
      run({script("slow.sh", "sleep 30 &\necho $! > child.pid\nwait")}, 0.3);
  EXPECT_FALSE(outcome.solution);
  EXPECT_NE(outcome.failure.find("gave no answer within 0.3 s"), std::string::npos)
      << outcome.failure;
  const pid_t child = std::stoi(read("child.pid"));
  EXPECT_TRUE(process_ends(child)) << "the program's own child " << child << " still runs";
}

TEST_F(CommandSynthesizerTest, LeftoverChildrenDoNotDelayTheAnswer) {
  // The background sleep keeps stdout open after the program has answered and exited.
  const SynthesisOutcome outcome = run(
      {script("leaves.sh", "sleep 30 &\necho $! > child.pid\necho '{\"error\": \"done\"}'")}, 20);
  EXPECT_NE(outcome.failure.find("reported an error: done"), std::string::npos) << outcome.failure;
  EXPECT_TRUE(process_ends(std::stoi(read("child.pid"))));
}

TEST_F(CommandSynthesizerTest, OutputOverTheLimitIsAFailure) {
  const SynthesisOutcome outcome =
      run({script("flood.sh", "head -c 100000 /dev/zero | tr '\\0' x")}, 10, 1000);
  EXPECT_FALSE(outcome.solution);
  EXPECT_NE(outcome.failure.find("wrote more than 1000 bytes to stdout"), std::string::npos)
      << outcome.failure;
}

TEST_F(CommandSynthesizerTest, MalformedAnswersAreFailuresNamingTheProblem) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"this is not json", "invalid JSON"},
      {"[1, 2]", "expected object"},
      {R"({"files": []})", R"(expected an object with "sources" or "error")"},
      {R"({"sources": "main.cpp"})", "sources: expected array"},
      {R"({"sources": [{"path": "main.cpp"}]})", "sources[0].content: missing required field"},
      {R"({"sources": [{"path": "main.cpp", "content": 3}]})", "sources[0].content: expected"},
      {R"({"sources": [{"path": "../main.cpp", "content": ""}]})", "expected a relative path"},
      {R"({"sources": [{"path": "other.cpp", "content": ""}]})", "lack the entry file main.cpp"},
      {R"({"sources": [{"path": "main.cpp", "content": ""}], "cflag": []})", "cflag"},
      {R"({"sources": [{"path": "main.cpp", "content": ""}], "cflags": "-O3"})", "cflags"},
      {"  \n", "wrote nothing to stdout"},
  };
  for (const auto& [answer, expected] : cases) {
    temp_.write("answer.txt", answer);
    const SynthesisOutcome outcome = run({script("answer.sh", "cat answer.txt")});
    EXPECT_FALSE(outcome.solution) << answer;
    EXPECT_NE(outcome.failure.find(expected), std::string::npos)
        << answer << " gave: " << outcome.failure;
  }
}

TEST_F(CommandSynthesizerTest, MissingOrNonExecutableProgramIsAFailure) {
  SynthesisOutcome outcome = run({(temp_ / "absent.sh").string()});
  EXPECT_NE(outcome.failure.find("does not exist"), std::string::npos) << outcome.failure;
  EXPECT_TRUE(outcome.exchanges.empty());

  outcome = run({"kernelarc-no-such-synthesizer"});
  EXPECT_NE(outcome.failure.find("no executable 'kernelarc-no-such-synthesizer' on $PATH"),
            std::string::npos)
      << outcome.failure;

  const fs::path plain = temp_.write("plain.sh", "#!/bin/sh\n");
  outcome = run({plain.string()});
  EXPECT_NE(outcome.failure.find("is not executable"), std::string::npos) << outcome.failure;
  EXPECT_FALSE(outcome.solution);
}

TEST_F(CommandSynthesizerTest, ProgramReadsTheWholeRequestOnStdin) {
  SynthesisRequest large = request();
  large.parent->solution.sources[0].content += std::string(3 << 20, 'x');  // beyond a pipe
  CommandSynthesizer synthesizer(
      {{script("copy.sh", "cat > seen.json\necho '{\"error\": \"copied\"}'")},
       10,
       1 << 20,
       temp_.path()});
  const SynthesisOutcome outcome = synthesizer.synthesize(large);
  EXPECT_NE(outcome.failure.find("reported an error: copied"), std::string::npos)
      << outcome.failure;

  const std::string seen = read("seen.json");
  EXPECT_EQ(seen, outcome.exchanges.at(0).request);
  const nlohmann::json json = nlohmann::json::parse(seen);
  EXPECT_EQ(json["protocol"], 1);
  EXPECT_EQ(json["problem"]["name"], "scale_rows");
  EXPECT_EQ(json["workloads"].size(), 2u);
  EXPECT_EQ(json["device"], "cpu");
  EXPECT_EQ(json["hardware"], "8 cores");
  EXPECT_EQ(json["strategy"], "vectorize");
  EXPECT_EQ(json["move"], "improve");
  EXPECT_EQ(json["parent"]["solution"]["sources"][0]["content"],
            large.parent->solution.sources[0].content);
  EXPECT_EQ(json["parent"]["results"], "small 1.0 us");
  EXPECT_EQ(json["inspirations"].size(), 1u);
  EXPECT_EQ(json["inspirations"][0]["candidate_id"], 17);
  EXPECT_EQ(json["knowledge"], nlohmann::json::array({"use AVX2"}));
  EXPECT_EQ(json["board"], nlohmann::json::array({"tiling helps"}));
  EXPECT_EQ(json["recent_failures"], nlohmann::json::array({"candidate 12: COMPILE_ERROR"}));
  EXPECT_EQ(json["seed"], 42);
}

TEST_F(CommandSynthesizerTest, EchoParentExampleReturnsTheParentsSources) {
  const std::string example =
      std::string(KERNELARC_SOURCE_DIR) + "/examples/synthesizers/echo_parent.py";
  CommandSynthesizer synthesizer({{"python3", example}, 30, 1 << 20, {}});
  const SynthesisOutcome outcome = synthesizer.synthesize(request());
  ASSERT_TRUE(outcome.solution) << outcome.failure;
  ASSERT_EQ(outcome.solution->sources.size(), 1u);
  EXPECT_EQ(outcome.solution->sources[0].path, "main.cpp");
  EXPECT_EQ(outcome.solution->sources[0].content, "// the parent\nint ka_run();\n");
  EXPECT_EQ(outcome.solution->description, "the sources of the parent, unchanged");
}

// Issue 25, item 6: a draft (no parent) is answered with the candidate it is shown (the run's
// baseline), flags included; with nothing shown it says why.
TEST_F(CommandSynthesizerTest, EchoParentExampleAnswersADraftFromTheCandidateShown) {
  const std::string example =
      std::string(KERNELARC_SOURCE_DIR) + "/examples/synthesizers/echo_parent.py";
  CommandSynthesizer synthesizer({{"python3", example}, 30, 1 << 20, {}});
  const SynthesisOutcome draft = synthesizer.synthesize(request(false));
  ASSERT_TRUE(draft.solution) << draft.failure;
  EXPECT_EQ(draft.solution->sources[0].content, "// the parent\nint ka_run();\n");
  EXPECT_EQ(draft.solution->cflags, (std::vector<std::string>{"-O2"}));
  EXPECT_EQ(draft.solution->ld_flags, (std::vector<std::string>{"-lm"}));

  SynthesisRequest nothing_shown = request(false);
  nothing_shown.inspirations.clear();
  const SynthesisOutcome refused = synthesizer.synthesize(nothing_shown);
  EXPECT_FALSE(refused.solution);
  EXPECT_NE(refused.failure.find("nothing to echo"), std::string::npos) << refused.failure;
}

}  // namespace
}  // namespace kernelarc
