// A code synthesizer writes a whole candidate solution (sources and solution metadata) for a
// problem, as an LLM or an external program does, where the template synthesizer only chooses
// knob values. The orchestrator asks it for one candidate at a time, with the context the agent
// that asked has: the parent candidate (its code, results and diagnosis), candidates to learn
// from, the agent's strategy, what the run has concluded so far and what failed last.
//
// A synthesizer never throws for what its backend did (an unreachable server, a malformed or
// truncated answer, a program that crashed): it returns a SynthesisOutcome without a solution
// and with the reason, so that the run records it and carries on. The one exception is a
// configuration the server refuses (a wrong key, an unknown model or endpoint path): that throws
// InputError, because every further request would fail the same way, and the run stops.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/eval_status.h"
#include "core/problem.h"

namespace kernelarc {

/// A candidate the synthesizer may build on, with what the guard said about it.
struct CandidateContext {
  int64_t candidate_id = 0;
  Solution solution;
  std::optional<EvalStatus> status;  ///< none when it was never evaluated
  std::string results;    ///< per-workload times, speedups and SOL fractions, as a small table
  std::string diagnosis;  ///< the diagnosis at the largest workload in words ("" when none)
  std::string log;        ///< for a failure: the guard's log (compile errors trimmed)
};

/// How the new candidate relates to the context (the universal operator's moves).
enum class SynthesisMove {
  Draft,      ///< a first solution from the problem alone
  Improve,    ///< a better version of the parent
  Crossover,  ///< the parent combined with the ideas of `inspirations`
  Repair,     ///< the parent failed (its log says how): fix it
};
/// "draft", "improve", "crossover", "repair".
const char* synthesis_move_name(SynthesisMove move);

struct SynthesisRequest {
  const Problem* problem = nullptr;
  /// The workloads the run evaluates (a selection of the problem's); empty = all of them.
  std::vector<Workload> workloads;
  std::string device = "cpu";  ///< "cpu" or "cuda:N"
  std::string hardware;        ///< calibrated facts in words (peaks, SMs, caches, clocks)
  std::string agent;           ///< the asking agent's name
  std::string strategy;        ///< its strategy's focus in words
  SynthesisMove move = SynthesisMove::Draft;
  std::optional<CandidateContext> parent;
  std::vector<CandidateContext> inspirations;  ///< siblings or crossover partners
  std::vector<std::string> knowledge;          ///< retrieved knowledge-base chunks and skills
  std::vector<std::string> board;              ///< the run's conclusions so far
  std::vector<std::string> recent_failures;    ///< the last failed candidates' reasons
  uint64_t seed = 0;  ///< drawn by the agent: picks the model of an ensemble reproducibly
};

/// One exchange with the backend, stored in the object store and linked to the candidate.
struct SynthesisExchange {
  std::string request;   ///< what was sent (a prompt as JSON, or the command's stdin)
  std::string response;  ///< what came back (raw), "" when nothing did
  std::string model;     ///< the model or the command that answered
};

/// Tokens and money one candidate cost (zero for synthesizers that do not count them).
struct SynthesisUsage {
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;
  double cost_usd = 0;
  bool from_cache = false;  ///< replayed from the response cache: nothing was spent
};

struct SynthesisOutcome {
  std::optional<Solution> solution;
  /// Why there is no solution ("the server answered 429 five times", "the answer held no code
  /// block", "the answer was cut at max_tokens"); empty exactly when `solution` is set.
  std::string failure;
  std::vector<SynthesisExchange> exchanges;
  SynthesisUsage usage;
  /// No answer arrived (the server or the network failed, or the replay cache missed): nothing
  /// about the code, so the run keeps it out of the prompts' "Recent failures".
  bool transport_failure = false;
};

/// `count` chunks of the run's retrieved knowledge for one request, chosen by its seed (a
/// window of the list starting at seed mod its size), so that prompts vary from request to
/// request and a replay with the same seed gets the same ones.
std::vector<std::string> knowledge_for_request(const std::vector<std::string>& pool, uint64_t seed,
                                               std::size_t count = 4);

class CodeSynthesizer {
 public:
  virtual ~CodeSynthesizer() = default;
  /// "llm" or "command": the name candidates are labelled with.
  virtual std::string name() const = 0;
  virtual SynthesisOutcome synthesize(const SynthesisRequest& request) = 0;
};

}  // namespace kernelarc
