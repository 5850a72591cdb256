#include "codesynth/llm_synthesizer.h"

#include <gtest/gtest.h>

#include <deque>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kernelarc {
namespace {

const std::string kProblem = std::string(KERNELARC_SOURCE_DIR) + "/problems/cuda/rmsnorm_bf16";
const std::string kKernel = "#include \"kernelarc/abi.h\"\nint ka_run() { return 0; }\n";

/// Answers from a script and remembers what it was asked.
class FakeChatClient : public ChatClient {
 public:
  std::deque<ChatResult> script;
  std::vector<std::string> models_asked;
  std::vector<ChatRequest> requests;

  ChatResult complete(const ModelConfig& model, const ChatRequest& request) override {
    models_asked.push_back(model.name);
    requests.push_back(request);
    ChatResult result = script.front();
    script.pop_front();
    return result;
  }
};

ChatResult answer(const std::string& text, const std::string& finish_reason = "stop") {
  ChatResult result;
  result.response = ChatResponse{.text = text,
                                 .finish_reason = finish_reason,
                                 .truncated = finish_reason == "length",
                                 .input_tokens = 1200,
                                 .output_tokens = 300,
                                 .model = "served-model"};
  result.attempts = 1;
  return result;
}

class LlmSynthesizerTest : public ::testing::Test {
 protected:
  LlmSynthesizerTest() : problem_(load_problem(kProblem)) {
    models_[0].name = "small@openai";
    models_[0].model = "small";
    models_[1].name = "large@anthropic";
    models_[1].model = "large";
  }

  LlmSynthesizer synthesizer() {
    return LlmSynthesizer(
        client_, [this](uint64_t seed) -> const ModelConfig& { return models_[seed % 2]; },
        load_prompt_templates(""));
  }

  SynthesisRequest draft_request() const {
    SynthesisRequest request;
    request.problem = &problem_;
    request.device = "cuda:0";
    request.agent = "explorer";
    return request;
  }

  SynthesisRequest improve_request() const {
    SynthesisRequest request = draft_request();
    request.move = SynthesisMove::Improve;
    request.parent = CandidateContext{.candidate_id = 3,
                                      .solution = load_solution(kProblem + "/solutions/basic"),
                                      .status = EvalStatus::Passed};
    return request;
  }

  Problem problem_;
  ModelConfig models_[2];
  FakeChatClient client_;
};

TEST_F(LlmSynthesizerTest, WholeFileAnswerBecomesASolutionAndTheExchangeIsRecorded) {
  client_.script.push_back(answer("Plan.\n```cuda kernel.cu\n" + kKernel + "```\n"));
  LlmSynthesizer llm = synthesizer();
  EXPECT_EQ(llm.name(), "llm");
  const SynthesisOutcome outcome = llm.synthesize(draft_request());
  ASSERT_TRUE(outcome.solution) << outcome.failure;
  EXPECT_TRUE(outcome.failure.empty());
  const Solution& solution = *outcome.solution;
  EXPECT_EQ(solution.entry_file, "kernel.cu");
  EXPECT_EQ(solution.entry_symbol, "ka_run");
  ASSERT_EQ(solution.sources.size(), 1u);
  EXPECT_EQ(solution.sources[0].content, kKernel);
  EXPECT_TRUE(solution.name.starts_with("rmsnorm_bf16_h4096__llm_")) << solution.name;
  EXPECT_EQ(solution.ext["synthesized"]["synthesizer"], "llm");

  ASSERT_EQ(outcome.exchanges.size(), 1u);
  const SynthesisExchange& exchange = outcome.exchanges[0];
  EXPECT_EQ(exchange.model, "small@openai");
  EXPECT_EQ(exchange.response, "Plan.\n```cuda kernel.cu\n" + kKernel + "```\n");
  const nlohmann::json sent = nlohmann::json::parse(exchange.request);
  EXPECT_EQ(sent["model"], "small@openai");
  EXPECT_EQ(sent["system"], client_.requests[0].system);
  ASSERT_EQ(sent["messages"].size(), 1u);
  EXPECT_EQ(sent["messages"][0]["role"], "user");
  EXPECT_EQ(sent["messages"][0]["content"], client_.requests[0].messages[0].content);
  EXPECT_EQ(outcome.usage.input_tokens, 1200);
  EXPECT_EQ(outcome.usage.output_tokens, 300);
  EXPECT_EQ(outcome.usage.cost_usd, 0);
  EXPECT_FALSE(outcome.usage.from_cache);
}

TEST_F(LlmSynthesizerTest, TheSeedChoosesTheModel) {
  client_.script.push_back(answer("```cuda kernel.cu\n" + kKernel + "```"));
  client_.script.push_back(answer("```cuda kernel.cu\n" + kKernel + "```"));
  LlmSynthesizer llm = synthesizer();
  SynthesisRequest request = draft_request();
  request.seed = 5;
  EXPECT_EQ(llm.synthesize(request).exchanges[0].model, "large@anthropic");
  request.seed = 8;
  EXPECT_EQ(llm.synthesize(request).exchanges[0].model, "small@openai");
  EXPECT_EQ(client_.models_asked, (std::vector<std::string>{"large@anthropic", "small@openai"}));
}

TEST_F(LlmSynthesizerTest, EditAnswerIsAppliedToTheParent) {
  client_.script.push_back(
      answer("<<<<<<< SEARCH kernel.cu\nconstexpr int kThreads = 256;\n=======\n"
             "constexpr int kThreads = 512;\n>>>>>>> REPLACE\n"));
  const SynthesisRequest request = improve_request();
  const SynthesisOutcome outcome = synthesizer().synthesize(request);
  ASSERT_TRUE(outcome.solution) << outcome.failure;
  ASSERT_EQ(outcome.solution->sources.size(), 1u);
  const std::string& code = outcome.solution->sources[0].content;
  EXPECT_NE(code.find("constexpr int kThreads = 512;"), std::string::npos);
  EXPECT_EQ(code.find("constexpr int kThreads = 256;"), std::string::npos);
  EXPECT_EQ(code.size(), request.parent->solution.sources[0].content.size());
  EXPECT_EQ(outcome.solution->cuda_cflags, request.parent->solution.cuda_cflags);
  EXPECT_EQ(outcome.solution->ext["synthesized"]["parent_candidate"], 3);
  EXPECT_NE(client_.requests[0].messages[0].content.find("# Task: make the parent faster"),
            std::string::npos);
}

TEST_F(LlmSynthesizerTest, FlagsFromTheAnswerAreAppliedAndNamed) {
  const std::string code = "```cuda kernel.cu\n" + kKernel + "```\n";
  client_.script.push_back(answer(code));
  client_.script.push_back(
      answer(code + "```json solution\n{\"cuda_cflags\": [\"-O3\", \"-lineinfo\"]}\n```\n"));
  LlmSynthesizer llm = synthesizer();
  const SynthesisOutcome plain = llm.synthesize(draft_request());
  const SynthesisOutcome flagged = llm.synthesize(draft_request());
  ASSERT_TRUE(plain.solution && flagged.solution) << plain.failure << flagged.failure;
  EXPECT_EQ(plain.solution->cuda_cflags, (std::vector<std::string>{"-O3"}));
  EXPECT_EQ(flagged.solution->cuda_cflags, (std::vector<std::string>{"-O3", "-lineinfo"}));
  EXPECT_NE(plain.solution->name, flagged.solution->name);
}

// The flag the issue found running a shell on the host: refused by name, and no solution (so
// nothing is stored or built).
TEST_F(LlmSynthesizerTest, WrapperFlagIsRefusedAndNeverBecomesASolution) {
  const std::string code = "```cuda kernel.cu\n" + kKernel + "```\n";
  client_.script.push_back(answer(code + "```json solution\n{\"cflags\": [\"-O3\", \"-wrapper\", "
                                         "\"/bin/sh,-c,id\"]}\n```\n"));
  client_.script.push_back(
      answer(code + "```json solution\n{\"cuda_cflags\": [\"-ccbin\", \"/tmp/cc\"]}\n```\n"));
  LlmSynthesizer llm = synthesizer();
  const SynthesisOutcome wrapper = llm.synthesize(draft_request());
  EXPECT_FALSE(wrapper.solution);
  EXPECT_NE(wrapper.failure.find("flag \"-wrapper\" is not allowed"), std::string::npos)
      << wrapper.failure;
  const SynthesisOutcome ccbin = llm.synthesize(draft_request());
  EXPECT_FALSE(ccbin.solution);
  EXPECT_NE(ccbin.failure.find("\"-ccbin\""), std::string::npos) << ccbin.failure;
}

TEST_F(LlmSynthesizerTest, TruncatedAnswerIsAFailure) {
  client_.script.push_back(answer("```cuda kernel.cu\n" + kKernel + "```\n", "length"));
  const SynthesisOutcome outcome = synthesizer().synthesize(draft_request());
  EXPECT_FALSE(outcome.solution);
  EXPECT_EQ(outcome.failure, "the answer was cut at max_tokens (finish_reason length)");
  ASSERT_EQ(outcome.exchanges.size(), 1u);
  EXPECT_EQ(outcome.exchanges[0].response, "```cuda kernel.cu\n" + kKernel + "```\n");
  EXPECT_EQ(outcome.usage.output_tokens, 300);
}

TEST_F(LlmSynthesizerTest, ClientFailureIsReturnedWithItsText) {
  ChatResult failed;
  failed.failure = "HTTP 500 from http://127.0.0.1:9/v1/chat/completions: overloaded";
  failed.response_body = "{\"error\": \"overloaded\"}";
  failed.attempts = 5;
  client_.script.push_back(failed);
  const SynthesisOutcome outcome = synthesizer().synthesize(draft_request());
  EXPECT_FALSE(outcome.solution);
  EXPECT_EQ(outcome.failure, failed.failure);
  ASSERT_EQ(outcome.exchanges.size(), 1u);
  EXPECT_EQ(outcome.exchanges[0].response, failed.response_body);
  EXPECT_FALSE(outcome.exchanges[0].request.empty());
  EXPECT_EQ(outcome.usage.input_tokens, 0);
}

TEST_F(LlmSynthesizerTest, ParserAndSolutionFailuresAreReturned) {
  client_.script.push_back(answer("I would use a warp per row."));
  client_.script.push_back(answer("```cuda helper.cu\n" + kKernel + "```\n"));
  ChatResult cached = answer("```cuda kernel.cu\n" + kKernel + "```\n");
  cached.from_cache = true;
  client_.script.push_back(cached);
  LlmSynthesizer llm = synthesizer();
  const SynthesisOutcome prose = llm.synthesize(draft_request());
  EXPECT_FALSE(prose.solution);
  EXPECT_EQ(prose.failure, "the answer holds no code block");
  const SynthesisOutcome no_entry = llm.synthesize(draft_request());
  EXPECT_FALSE(no_entry.solution);
  EXPECT_EQ(no_entry.failure, "the sources lack the entry file kernel.cu");
  EXPECT_EQ(no_entry.exchanges.size(), 1u);
  EXPECT_TRUE(llm.synthesize(draft_request()).usage.from_cache);
}

}  // namespace
}  // namespace kernelarc
