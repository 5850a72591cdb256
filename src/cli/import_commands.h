// The formats of `kernelarc import`, each a subcommand of it.
#pragma once

#include "cli/commands.h"

namespace kernelarc {

/// Registers `import flashinfer` on the import command; the runner runs it once parsed.
CommandRunner add_import_flashinfer(CLI::App& import);

}  // namespace kernelarc
