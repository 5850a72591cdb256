// What a code synthesizer (a language model or an external program) may choose about how its
// candidate is built. Its compiler flags, file names and entry point reach a compiler that runs
// on the host, and a compiler flag such as `-wrapper /bin/sh,-c,...`, `-B dir`, `-fplugin=...`,
// `-specs=...` or `@file` runs or reads anything the user can. So every such input passes an
// allowlist: optimization levels, target and fast-math choices, warnings, `-D NAME=value` with
// safe characters, a few nvcc code-generation options, and include paths inside the solution.
// Anything else is refused with the reason naming the input, before it is stored or built.
//
// User-written solutions and the bundled templates are trusted and not checked; a solution is
// synthesized when its "kernelarc" object holds "synthesized" (make_synthesized_solution sets
// it), which is also how a stored synthesized solution is recognized when it is rebuilt.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/problem.h"

namespace kernelarc {

/// Which program a flag list goes to.
enum class FlagTarget {
  HostCompiler,  ///< cflags: g++ or clang++ (and nvcc's -Xcompiler list)
  CudaCompiler,  ///< cuda_cflags: nvcc, or NVRTC for a device-only kernel
  Linker,        ///< ld_flags: given to the compiler driver at the link
};

/// Why `flags` (the list named `list` in messages) holds a flag outside the allowlist for
/// `target`, naming the flag; nullopt when every flag is allowed.
std::optional<std::string> refuse_flags(const std::vector<std::string>& flags, FlagTarget target,
                                        std::string_view list);

/// Why `path` is not a safe source file name (relative, no "..", no leading '-' or '.', only
/// letters, digits, '_', '-', '.', '/', and a source or header extension); nullopt when it is.
std::optional<std::string> refuse_source_path(const std::string& path);

/// Whether the solution was written by a code synthesizer ("kernelarc"."synthesized").
bool is_synthesized_solution(const Solution& solution);

/// Every synthesizer-chosen build input of the solution: its three flag lists, source paths,
/// entry file and symbol, and languages. The reason for the first refused one, or nullopt.
std::optional<std::string> refuse_build_inputs(const Solution& solution);

}  // namespace kernelarc
