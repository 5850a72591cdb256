// `kernelarc optimize`'s code synthesizers (--synth llm / command): their flags, the objects
// behind them (HTTP client, response cache, prompt templates) and the context they are given
// (the hardware in words, retrieved knowledge).
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "codesynth/code_synthesizer.h"
#include "llm/llm_config.h"
#include "optimize/orchestrator.h"

namespace kernelarc {

struct CodeSynthFlags {
  std::string llm_config;  ///< JSON file: models (an ensemble), budget, repair rounds, prompts
  std::string provider = "openai";
  std::string endpoint;
  std::string model;
  std::string api_key_env;
  std::string prompt_dir;
  std::string cache_dir;  ///< default <workspace>/llm-cache
  bool replay = false;
  std::string command;  ///< run with /bin/sh -c
  double command_timeout_s = 120;
  double code_share = OptimizeOptions{}.code_share;
  int synthesis_parallel = OptimizeOptions{}.synthesis_parallel;
  int repair_rounds = -1;  ///< -1: the configuration's (1 by default)
  int64_t max_tokens = 0;  ///< 0: the configuration's (none by default)
  double max_cost_usd = 0;
};

/// Which synthesizers --synth names: "template", "llm", "command", "template+llm" or
/// "template+command"; InputError otherwise.
struct SynthChoice {
  bool templates = true;
  std::string code;  ///< "", "llm" or "command"
};
SynthChoice parse_synth(const std::string& text);

/// A code synthesizer with everything it owns.
class CodeSynthSetup {
 public:
  /// InputError for unusable flags or configuration (naming the flag, file or field).
  CodeSynthSetup(const std::string& kind, const CodeSynthFlags& flags,
                 const std::filesystem::path& workspace);
  ~CodeSynthSetup();

  CodeSynthesizer& synthesizer() { return *synthesizer_; }
  /// The run's caps and repair rounds from the flags over the configuration.
  std::optional<int64_t> max_tokens() const { return max_tokens_; }
  std::optional<double> max_cost_usd() const { return max_cost_usd_; }
  int repair_rounds() const { return repair_rounds_; }
  /// One line for the run's header ("llm: model-a@openai (weight 1) ...").
  const std::string& description() const { return description_; }

 private:
  struct Owned;
  std::unique_ptr<Owned> owned_;
  CodeSynthesizer* synthesizer_ = nullptr;
  std::optional<int64_t> max_tokens_;
  std::optional<double> max_cost_usd_;
  int repair_rounds_ = 1;
  std::string description_;
};

/// The device in words for a synthesizer: its calibrated peaks, caches and cores.
std::string hardware_facts(const std::filesystem::path& workspace, const std::string& device);

/// The knowledge-base notes that match the problem's family and the device, as text, without
/// those about the other kind of device (a GPU note on the CPU). The orchestrator shows a few
/// of them per request, chosen by the request's seed (knowledge_for_request).
std::vector<std::string> synthesis_knowledge(const std::filesystem::path& workspace,
                                             const std::string& family, const std::string& device,
                                             int limit = 12);

}  // namespace kernelarc
