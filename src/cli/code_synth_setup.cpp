#include "cli/code_synth_setup.h"

#include <fmt/format.h>

#include "backend/calibrate.h"
#include "codesynth/command_synthesizer.h"
#include "codesynth/llm_synthesizer.h"
#include "codesynth/prompt_builder.h"
#include "core/error.h"
#include "kb/knowledge_base.h"
#include "llm/ensemble.h"
#include "llm/http_chat_client.h"
#include "llm/response_cache.h"

namespace kernelarc {

void add_code_synth_flags(CLI::App& command, CodeSynthFlags& flags) {
  command.add_option("--llm-config", flags.llm_config,
                     "JSON file: models (an ensemble with weights), budget, repair rounds, "
                     "prompt templates");
  command.add_option("--llm-provider", flags.provider, "openai (chat completions) or anthropic")
      ->capture_default_str();
  command.add_option("--llm-endpoint", flags.endpoint,
                     "base URL, e.g. https://api.openai.com/v1 or http://127.0.0.1:8000/v1");
  command.add_option("--llm-model", flags.model, "model name");
  command.add_option("--llm-api-key-env", flags.api_key_env,
                     "environment variable that holds the API key (never stored)");
  command.add_option("--llm-prompts", flags.prompt_dir,
                     "folder of prompt templates replacing the built-in ones of the same name");
  command.add_option("--llm-cache", flags.cache_dir,
                     "response cache folder (default WORKSPACE/llm-cache)");
  command.add_flag("--llm-replay", flags.replay,
                   "answer only from the response cache; a prompt not in it fails");
  command.add_option("--synth-command", flags.command,
                     "--synth command: program run with /bin/sh -c, request JSON on stdin, "
                     "sources JSON on stdout");
  command
      .add_option("--synth-timeout", flags.command_timeout_s,
                  "--synth command: seconds per request")
      ->capture_default_str();
  command
      .add_option("--code-share", flags.code_share,
                  "odds that a move from a template candidate asks for code instead")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  command
      .add_option("--repair-rounds", flags.repair_rounds,
                  "times a failed program goes back with its error (default 1)")
      ->check(CLI::Range(0, 10));
  command.add_option("--llm-max-tokens", flags.max_tokens,
                     "stop asking for code after this many tokens in and out");
  command.add_option("--llm-max-cost", flags.max_cost_usd,
                     "stop asking for code after this many US dollars");
}

SynthChoice parse_synth(const std::string& text) {
  if (text == "template") return {true, ""};
  if (text == "llm" || text == "command") return {false, text};
  if (text == "template+llm") return {true, "llm"};
  if (text == "template+command") return {true, "command"};
  throw InputError(
      fmt::format("--synth {}: expected template, llm, command, template+llm or "
                  "template+command",
                  text));
}

struct CodeSynthSetup::Owned {
  LlmConfig config;
  std::unique_ptr<ChatClient> client;
  std::unique_ptr<CodeSynthesizer> synthesizer;
};

namespace {

LlmConfig llm_config_from(const CodeSynthFlags& flags) {
  if (!flags.llm_config.empty()) {
    if (!flags.endpoint.empty() || !flags.model.empty())
      throw InputError("--llm-config and --llm-endpoint/--llm-model: give one or the other");
    return load_llm_config(flags.llm_config);
  }
  if (flags.endpoint.empty() || flags.model.empty())
    throw InputError(
        "--synth llm: give --llm-config FILE, or --llm-endpoint URL and --llm-model NAME");
  LlmConfig config;
  config.models.push_back(
      model_from_flags(flags.provider, flags.endpoint, flags.model, flags.api_key_env));
  return config;
}

}  // namespace

CodeSynthSetup::CodeSynthSetup(const std::string& kind, const CodeSynthFlags& flags,
                               const std::filesystem::path& workspace)
    : owned_(std::make_unique<Owned>()) {
  if (kind == "command") {
    if (flags.command.empty())
      throw InputError("--synth command: give the program with --synth-command");
    CommandSynthesizerOptions options;
    options.argv = {"/bin/sh", "-c", flags.command};
    options.timeout_s = flags.command_timeout_s;
    owned_->synthesizer = std::make_unique<CommandSynthesizer>(std::move(options));
    description_ = fmt::format("command: {}", flags.command);
  } else {
    owned_->config = llm_config_from(flags);
    LlmConfig& config = owned_->config;
    if (!flags.prompt_dir.empty()) config.prompt_dir = flags.prompt_dir;
    const std::filesystem::path cache =
        flags.cache_dir.empty() ? workspace / "llm-cache" : std::filesystem::path(flags.cache_dir);
    owned_->client = std::make_unique<CachingChatClient>(
        flags.replay ? nullptr : std::make_unique<HttpChatClient>(), cache,
        flags.replay ? CacheMode::Replay : CacheMode::Record);
    owned_->synthesizer = std::make_unique<LlmSynthesizer>(
        *owned_->client,
        [&config](uint64_t seed) -> const ModelConfig& { return choose_model(config, seed); },
        load_prompt_templates(config.prompt_dir));
    std::vector<std::string> models;
    for (const ModelConfig& model : config.models)
      models.push_back(fmt::format("{} (weight {})", model.name, model.weight));
    description_ = fmt::format("llm: {}; responses cached in {}{}", fmt::join(models, ", "),
                               cache.string(), flags.replay ? " (replay only)" : "");
    max_tokens_ = config.max_tokens_total;
    max_cost_usd_ = config.max_cost_usd;
    repair_rounds_ = config.repair_rounds;
  }
  if (flags.max_tokens > 0) max_tokens_ = flags.max_tokens;
  if (flags.max_cost_usd > 0) max_cost_usd_ = flags.max_cost_usd;
  if (flags.repair_rounds >= 0) repair_rounds_ = flags.repair_rounds;
  synthesizer_ = owned_->synthesizer.get();
}

CodeSynthSetup::~CodeSynthSetup() = default;

std::string hardware_facts(const std::filesystem::path& workspace, const std::string& device) {
  const auto calibration = load_calibration(workspace, device);
  if (!calibration) return fmt::format("{} (not calibrated: run kernelarc calibrate)", device);
  const Calibration& c = *calibration;
  std::string text = fmt::format("{} ({}): copy bandwidth {:.0f} GB/s, fp32 FMA {:.1f} TFLOP/s",
                                 c.description, c.device, c.copy_bandwidth_gbs, c.fp32_fma_tflops);
  for (const auto& [dtype, tflops] : c.tensor_tflops)
    text += fmt::format(", {} tensor cores {:.0f} TFLOP/s", dtype, tflops);
  if (c.sm_count > 0) text += fmt::format(", {} SMs", c.sm_count);
  if (c.cores > 0) text += fmt::format(", {} cores", c.cores);
  if (c.l2_bytes > 0) text += fmt::format(", L2 {} KiB", c.l2_bytes / 1024);
  if (c.llc_bytes > 0) text += fmt::format(", last-level cache {} KiB", c.llc_bytes / 1024);
  return text;
}

std::vector<std::string> synthesis_knowledge(const std::filesystem::path& workspace,
                                             const std::string& family, const std::string& device,
                                             int limit) {
  KnowledgeBase knowledge = open_knowledge_base(workspace);
  knowledge.ensure_builtin_notes();
  KbQuery query;
  query.text = family;
  query.keys.families = {family};
  query.keys.hardware = {device == "cpu" ? "cpu" : "cuda"};
  query.limit = limit;
  std::vector<std::string> texts;
  for (const KbHit& hit : knowledge.search(query))
    texts.push_back(fmt::format("{} > {}\n{}", hit.title, hit.heading, hit.text));
  return texts;
}

}  // namespace kernelarc
