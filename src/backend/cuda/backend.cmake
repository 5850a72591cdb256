# CUDA support is optional. With a CUDA toolkit, the CUDA device (CUPTI timing), the cubin
# launcher and the GPU calibration are built in and KERNELARC_WITH_CUDA is defined for this layer
# and every layer above it. Only the static CUDA runtime is linked, and it does nothing until a
# CUDA device is used: NVRTC, CUPTI, NVML and cuBLASLt are opened with dlopen where they are
# needed (cuda_dynlib.h), so kernelarc starts and runs its CPU path on machines without a driver.
# The paths of the toolkit's libraries found here are compiled in as the first places to look.
#
# Sources that include the toolkit's headers; left out of builds without the toolkit, where the
# *_stub.cpp files (which compile to nothing when KERNELARC_WITH_CUDA is defined) stand in.
set(cuda_only_sources cuda_device.cpp cuda_cupti.cpp cuda_cubin_kernel.cpp cuda_calibrate.cpp)

find_package(CUDAToolkit QUIET)
if(CUDAToolkit_FOUND AND TARGET CUDA::cudart_static)
  message(STATUS "kernelarc: CUDA ${CUDAToolkit_VERSION} found, building the CUDA backend")
  target_compile_definitions(kernelarc_backend PUBLIC KERNELARC_WITH_CUDA)
  target_link_libraries(kernelarc_backend PUBLIC CUDA::cudart_static)
  list(GET CUDAToolkit_INCLUDE_DIRS 0 cuda_include_dir)
  target_compile_definitions(kernelarc_backend PRIVATE
    KERNELARC_NVCC="${CUDAToolkit_NVCC_EXECUTABLE}"
    KERNELARC_CUDA_INCLUDE_DIR="${cuda_include_dir}")
  foreach(library nvrtc cupti cublasLt)
    if(TARGET CUDA::${library})
      get_target_property(location CUDA::${library} IMPORTED_LOCATION)
      string(TOUPPER ${library} upper)
      target_compile_definitions(kernelarc_backend PRIVATE KERNELARC_${upper}_LIBRARY="${location}")
    endif()
  endforeach()
else()
  message(STATUS "kernelarc: no CUDA toolkit found, building without the CUDA backend")
  get_target_property(sources kernelarc_backend SOURCES)
  foreach(source ${cuda_only_sources})
    list(FILTER sources EXCLUDE REGEX "/${source}$")
  endforeach()
  set_property(TARGET kernelarc_backend PROPERTY SOURCES ${sources})
endif()
