#include "cli/code_synth_flags.h"

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
  command
      .add_option("--synthesis-parallel", flags.synthesis_parallel,
                  "requests to the code synthesizer running at once (agents' LLM or command "
                  "requests overlap each other and the measurements)")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  command.add_option("--llm-max-tokens", flags.max_tokens,
                     "stop asking for code after this many tokens in and out");
  command.add_option("--llm-max-cost", flags.max_cost_usd,
                     "stop asking for code after this many US dollars");
}

}  // namespace kernelarc
