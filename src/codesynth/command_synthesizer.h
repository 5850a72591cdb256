// A code synthesizer that is an external program: any agent, script or person plugs in by reading
// the request as JSON on stdin (synthesis_request_to_json) and writing one JSON object on stdout,
// {"sources": [{"path", "content"}, ...]} with optional "cflags", "cuda_cflags", "ld_flags" and
// "description", or {"error": "why"}. examples/synthesizers/ documents the protocol and holds an
// example program.
//
// The program runs in its own process group, with a timeout after which the whole group is
// killed, and a limit on what it may write to stdout. Whatever it does (not found, a crash, a
// non-zero exit, a timeout, too much or malformed output) becomes a recorded failure, never an
// exception.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "codesynth/code_synthesizer.h"

namespace kernelarc {

struct CommandSynthesizerOptions {
  /// The program and its arguments; argv[0] is a path or a name searched on $PATH.
  std::vector<std::string> argv;
  double timeout_s = 120;  ///< per request; then the program's process group is killed
  std::size_t max_output_bytes = std::size_t{16} << 20;  ///< stdout beyond this is a failure
  std::filesystem::path working_directory;               ///< empty = kernelarc's own
};

class CommandSynthesizer : public CodeSynthesizer {
 public:
  explicit CommandSynthesizer(CommandSynthesizerOptions options);

  std::string name() const override { return "command"; }
  /// Safe to call from several threads at once: each call runs its own process.
  SynthesisOutcome synthesize(const SynthesisRequest& request) override;

 private:
  CommandSynthesizerOptions options_;
  std::string command_line_;  ///< argv joined, shell-quoted where needed: the exchanges' model
};

}  // namespace kernelarc
