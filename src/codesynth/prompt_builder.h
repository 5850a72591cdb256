// The prompt an LLM synthesizer sends: a system message (the model's role, the kernel ABI, the
// rules the guard enforces) and one user message for the move (draft, improve, crossover or
// repair) with the problem, the parent and the run's context filled into Markdown templates.
//
// The templates are files (prompts/*.md in the data directory) that a user may override one by
// one. A template names its sections as {{placeholder}}; an empty section renders as "(none)".
// The same request always gives byte-identical prompts: the response cache keys on them.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "codesynth/code_synthesizer.h"
#include "llm/chat.h"

namespace kernelarc {

/// The prompt files, as text; each may use the placeholders listed in prompt_builder.cpp (the
/// same list docs and error messages give).
struct PromptTemplates {
  std::string system;           ///< system.md: the system message
  std::string draft;            ///< draft.md: the user message of a Draft move
  std::string improve;          ///< improve.md
  std::string crossover;        ///< crossover.md
  std::string repair;           ///< repair.md
  std::string response_format;  ///< response_format.md: fills {{response_format}}
  std::string guard_rules;      ///< guard_rules.md: fills {{guard_rules}}
  std::string abi_header;       ///< include/kernelarc/abi.h, verbatim: fills {{abi}}
};

/// data_dir()/prompts (core/paths.h): the shipped templates.
std::filesystem::path default_prompt_dir();

/// The shipped templates, each replaced by the file of the same name in `override_dir` when it
/// has one (an empty path overrides nothing). InputError naming the file when `override_dir` is
/// not a directory, holds a .md file that is not a prompt file (a typo would pass silently), a
/// file cannot be read, or a template uses an unknown placeholder.
PromptTemplates load_prompt_templates(const std::filesystem::path& override_dir);

/// The system message and the move's user message for `request` (its problem must be set).
ChatRequest build_prompt(const PromptTemplates& templates, const SynthesisRequest& request);

/// What the response cache keys this request on (ChatRequest::cache_identity): the prompt
/// built from the request with every number in what the run measured or calibrated (results,
/// diagnoses, logs, the board, recent failures, the hardware) masked, so that a replay of the
/// same search (--seed) finds its answers although times and candidate ids differ. Code is not
/// masked: two programs that differ in a constant are two requests.
std::string cache_identity(const PromptTemplates& templates, const SynthesisRequest& request);

/// A guard or compiler log cut for a prompt: from the first line that mentions an error, at most
/// 40 lines and 4000 characters, with a last line saying what was left out.
std::string trim_failure_log(std::string_view log);

}  // namespace kernelarc
