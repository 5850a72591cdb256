// --synth's flags: the LLM's endpoint, model, prompts and cache, the command synthesizer, and
// the share of candidates they propose (CodeSynthFlags in app/code_synth_setup.h).
#pragma once

#include <CLI/CLI.hpp>

#include "app/code_synth_setup.h"

namespace kernelarc {

void add_code_synth_flags(CLI::App& command, CodeSynthFlags& flags);

}  // namespace kernelarc
