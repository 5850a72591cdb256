# kernelarc_precompile(TARGET [TESTS] [CLI]): precompiled headers for a target (TESTS adds
# GoogleTest, CLI adds CLI11, about 4 s of parsing per unit that includes it). Parsing the
# third-party headers that nearly every translation unit includes (nlohmann/json, fmt, the
# standard containers, GoogleTest in tests) took most of each unit's compile time on the 2-core
# CI machine, where the whole build is on the critical path of every submission.
# With ccache, set CCACHE_SLOPPINESS=pch_defines,time_macros so that units using the header
# stay cacheable (README, "Quick start").
# One header is built per kind (libraries, tests, the CLI) and the other targets of that kind
# reuse it: built per target, the 37 copies of ~100 MB each took about 5 s apiece on that
# machine. Their flags agree: the layers' definitions (KERNELARC_WITH_CUDA) appear in none of
# the precompiled headers, which is what GCC requires of them.
option(KERNELARC_PRECOMPILED_HEADERS "Precompile the common third-party headers" ON)

set(KERNELARC_PCH_HEADERS
    <algorithm> <cstdint> <filesystem> <map> <memory> <optional> <set> <string> <string_view>
    <vector> <fmt/format.h> <nlohmann/json.hpp>)

function(kernelarc_precompile target)
  if(NOT KERNELARC_PRECOMPILED_HEADERS)
    return()
  endif()
  set(headers ${KERNELARC_PCH_HEADERS})
  set(kind LIBRARY)
  if("TESTS" IN_LIST ARGN)
    list(APPEND headers <gtest/gtest.h>)
    set(kind TESTS)
  endif()
  if("CLI" IN_LIST ARGN)
    list(APPEND headers <CLI/CLI.hpp>)
    set(kind CLI)
  endif()
  get_property(owner GLOBAL PROPERTY KERNELARC_PCH_OWNER_${kind})
  if(owner)
    target_precompile_headers(${target} REUSE_FROM ${owner})
  else()
    target_precompile_headers(${target} PRIVATE ${headers})
    set_property(GLOBAL PROPERTY KERNELARC_PCH_OWNER_${kind} ${target})
  endif()
endfunction()
