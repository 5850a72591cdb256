# kernelarc_layer(NAME DEPS...): one static library per layer, built from every .cpp in its
# folder, with its public dependencies only; an upward include fails to compile because the
# include path of a higher layer is never visible to a lower one.
function(kernelarc_layer name)
  file(GLOB sources CONFIGURE_DEPENDS "${CMAKE_CURRENT_SOURCE_DIR}/*.cpp")
  add_library(kernelarc_${name} STATIC ${sources})
  target_include_directories(kernelarc_${name} PUBLIC "${PROJECT_SOURCE_DIR}/src" "${PROJECT_SOURCE_DIR}/include")
  target_compile_options(kernelarc_${name} PRIVATE -Wall -Wextra -Wpedantic)
  target_compile_definitions(kernelarc_${name} PRIVATE KERNELARC_SOURCE_DIR="${KERNELARC_SOURCE_DIR}")
  target_link_libraries(kernelarc_${name} PUBLIC ${ARGN})
  kernelarc_precompile(kernelarc_${name})
endfunction()
