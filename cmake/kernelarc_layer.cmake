# kernelarc_layer_include_dir(NAME OUT): a folder under the build tree holding one link, NAME ->
# src/NAME, so that `#include "NAME/..."` works for whoever has that folder on its include path and
# for nobody else. Giving each layer only its own folder, and passing it on to the layers that
# link it, is what makes the layering a compile error rather than a convention: a lower layer
# never sees a higher layer's folder (tests/layering checks that an upward include fails).
function(kernelarc_layer_include_dir name out)
  set(dir "${PROJECT_BINARY_DIR}/layer_include/${name}")
  file(MAKE_DIRECTORY "${dir}")
  file(CREATE_LINK "${PROJECT_SOURCE_DIR}/src/${name}" "${dir}/${name}" SYMBOLIC)
  set(${out} "${dir}" PARENT_SCOPE)
endfunction()

# kernelarc_layer(NAME DEPS...): one static library per layer, built from every .cpp in its
# folder, with its public dependencies only.
function(kernelarc_layer name)
  file(GLOB sources CONFIGURE_DEPENDS "${CMAKE_CURRENT_SOURCE_DIR}/*.cpp")
  add_library(kernelarc_${name} STATIC ${sources})
  kernelarc_layer_include_dir(${name} include_dir)
  target_include_directories(kernelarc_${name} PUBLIC "${include_dir}" "${PROJECT_SOURCE_DIR}/include")
  target_compile_options(kernelarc_${name} PRIVATE -Wall -Wextra -Wpedantic)
  target_compile_definitions(kernelarc_${name} PRIVATE KERNELARC_SOURCE_DIR="${KERNELARC_SOURCE_DIR}")
  target_link_libraries(kernelarc_${name} PUBLIC ${ARGN})
  kernelarc_precompile(kernelarc_${name})
endfunction()
