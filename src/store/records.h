// The rows of the store's tables, as the search layer reads and writes them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/process_identity.h"

namespace kernelarc {

/// Stopped: interrupted (SIGINT, SIGTERM) with what it had measured kept; it may be resumed.
enum class RunStatus { Running, Finished, Failed, Stopped };
/// "running", "finished", "failed", "stopped", as stored.
std::string_view run_status_name(RunStatus status);

struct NewRun {
  std::string problem_name;
  std::string problem_hash;  ///< content hash of the problem definition
  std::string device;
  uint64_t seed = 0;
  nlohmann::json config = nlohmann::json::object();  ///< policy, agents, budget, ...
  int64_t budget_total = 0;                          ///< evaluations the run may spend
};

struct Run {
  int64_t id = 0;
  std::string created_at;
  std::string problem_name;
  std::string problem_hash;
  std::string device;
  uint64_t seed = 0;
  nlohmann::json config;
  RunStatus status = RunStatus::Running;
  std::optional<std::string> finished_at;
  /// The process that created or last resumed it; unknown for runs of stores before version 4.
  std::optional<ProcessIdentity> owner;
};

/// The status as `kernelarc runs` shows it: its name, except "abandoned" for a run still marked
/// running whose process on this host is gone (killed at once, or the machine restarted).
std::string_view shown_run_status(const Run& run);

struct NewCandidate {
  std::string agent;
  std::optional<int64_t> parent_id;
  std::vector<int64_t> inspired_by;  ///< candidate ids whose ideas it borrows
  std::string solution_key;          ///< object store key of the solution JSON
  std::string template_name;
  nlohmann::json knob_point = nlohmann::json::object();
  std::string note;  ///< why it was proposed, when the agent said ("" when not)
};

struct Candidate {
  int64_t id = 0;
  int64_t run_id = 0;
  int64_t seq = 0;  ///< 0, 1, 2, ... per run, in the order proposed
  std::string agent;
  std::optional<int64_t> parent_id;
  std::vector<int64_t> inspired_by;
  std::string solution_key;
  std::string template_name;
  nlohmann::json knob_point;
  std::string note;
  std::string proposed_at;
};

/// A finished evaluation; an unfinished one has no row.
struct Evaluation {
  std::string status;      ///< the trace status name: "PASSED", "COMPILE_ERROR", ...
  std::string traces_key;  ///< object store key of the traces JSON
  std::optional<double> median_ms;
  std::optional<double> ci_low_ms;
  std::optional<double> ci_high_ms;
  std::optional<double> sol_score;
  std::string evaluated_at;  ///< set by the store; ignored when recording
};

enum class BoardKind { Conclusion, Redirect };
/// "conclusion", "redirect", as stored.
std::string_view board_kind_name(BoardKind kind);

struct BoardEntry {
  int64_t id = 0;
  int64_t run_id = 0;
  int64_t seq = 0;  ///< 0, 1, 2, ... per run, in the order posted
  BoardKind kind = BoardKind::Conclusion;
  std::string text;
  std::vector<int64_t> evidence;  ///< candidate ids
  std::string created_at;
};

/// What a code synthesizer was asked and answered for one candidate: the exchanges themselves
/// are the object at record_key; the counts make a run's token and money totals one query.
struct Synthesis {
  std::string synthesizer;  ///< "llm", "command"
  std::string model;        ///< the model or command that answered ("" when none was asked)
  std::string record_key;   ///< object store key of the exchanges (prompts and responses)
  std::string failure;      ///< why no solution came of it; "" when one did
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;
  double cost_usd = 0;
  bool from_cache = false;
};

struct SynthesisTotals {
  int64_t calls = 0;
  int64_t cached = 0;
  int64_t failures = 0;
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;
  double cost_usd = 0;
};

/// An Nsight Compute profile of a candidate on one workload: diagnosis/ncu_runner.h's record,
/// a profile or why there is none.
struct Profile {
  int64_t candidate_id = 0;
  std::string workload;  ///< the workload's uuid
  nlohmann::ordered_json record;
  std::string created_at;  ///< set by the store; ignored when recording
};

struct Budget {
  int64_t total = 0;
  int64_t used = 0;  ///< evaluated candidates
  int64_t remaining() const { return total > used ? total - used : 0; }
};

}  // namespace kernelarc
