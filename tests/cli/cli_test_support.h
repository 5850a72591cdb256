// Runs the kernelarc executable as a user would, capturing its output and exit code.
#pragma once

#include <sys/wait.h>
#include <array>
#include <cstdio>
#include <string>

namespace {

struct CommandResult {
  int exit_code = -1;
  std::string output;
};

/// Runs a shell command line with its stderr joined to stdout.
CommandResult run_shell(const std::string& command_line) {
  const std::string command = command_line + " 2>&1";
  CommandResult result;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return result;
  std::array<char, 4096> buffer;
  while (fgets(buffer.data(), buffer.size(), pipe)) result.output += buffer.data();
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

/// Runs kernelarc with `arguments`.
CommandResult run(const std::string& arguments) {
  return run_shell(std::string(KERNELARC_BINARY) + " " + arguments);
}

}  // namespace
