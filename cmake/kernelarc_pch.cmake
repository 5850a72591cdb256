# kernelarc_precompile(TARGET [TESTS] [CLI]): precompiled headers for a target (TESTS adds
# GoogleTest, CLI adds CLI11, about 4 s of parsing per unit that includes it). Parsing the
# third-party headers that nearly every translation unit includes (nlohmann/json, fmt, the
# standard containers, GoogleTest in tests) took most of each unit's compile time on the 2-core
# CI machine, where the whole build is on the critical path of every submission.
# With ccache, set CCACHE_SLOPPINESS=pch_defines,time_macros so that units using the header
# stay cacheable (README, "Quick start").
option(KERNELARC_PRECOMPILED_HEADERS "Precompile the common third-party headers" ON)

set(KERNELARC_PCH_HEADERS
    <algorithm> <cstdint> <filesystem> <map> <memory> <optional> <set> <string> <string_view>
    <vector> <fmt/format.h> <nlohmann/json.hpp>)

function(kernelarc_precompile target)
  if(NOT KERNELARC_PRECOMPILED_HEADERS)
    return()
  endif()
  set(headers ${KERNELARC_PCH_HEADERS})
  if("TESTS" IN_LIST ARGN)
    list(APPEND headers <gtest/gtest.h>)
  endif()
  if("CLI" IN_LIST ARGN)
    list(APPEND headers <CLI/CLI.hpp>)
  endif()
  target_precompile_headers(${target} PRIVATE ${headers})
endfunction()
