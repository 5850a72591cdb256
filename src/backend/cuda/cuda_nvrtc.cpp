#include "backend/cuda/cuda_nvrtc.h"

#include <dlfcn.h>

#include <memory>

#include "backend/cuda/cuda_dynlib.h"

namespace kernelarc {
namespace {

// NVRTC's C ABI (stable since CUDA 11), declared here so that kernelarc builds without the
// toolkit's headers and links no CUDA library.
using NvrtcCode = int;
using NvrtcProgram = struct NvrtcProgramOpaque*;
constexpr NvrtcCode kNvrtcSuccess = 0;

struct Nvrtc {
  NvrtcCode (*version)(int*, int*);
  const char* (*error_string)(NvrtcCode);
  NvrtcCode (*create)(NvrtcProgram*, const char*, const char*, int, const char* const*,
                      const char* const*);
  NvrtcCode (*destroy)(NvrtcProgram*);
  NvrtcCode (*compile)(NvrtcProgram, int, const char* const*);
  NvrtcCode (*log_size)(NvrtcProgram, size_t*);
  NvrtcCode (*log)(NvrtcProgram, char*);
  NvrtcCode (*cubin_size)(NvrtcProgram, size_t*);
  NvrtcCode (*cubin)(NvrtcProgram, char*);
  NvrtcCode (*add_name)(NvrtcProgram, const char*);
  NvrtcCode (*lowered_name)(NvrtcProgram, const char*, const char**);
  std::string library_path;  ///< the file the library was loaded from
  std::string error;         ///< why NVRTC cannot be used; empty when it can
};

#ifdef KERNELARC_NVRTC_LIBRARY
constexpr const char* kNvrtcAtBuild = KERNELARC_NVRTC_LIBRARY;
#else
constexpr const char* kNvrtcAtBuild = "";
#endif

Nvrtc load_nvrtc() {
  Nvrtc api{};
  DynamicLibrary library = DynamicLibrary::open(toolkit_library_candidates(
      kNvrtcAtBuild, {"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12"}));
  if (!library.loaded()) {
    api.error = library.error();
    return api;
  }
  api.version = library.function<decltype(api.version)>("nvrtcVersion");
  api.error_string = library.function<decltype(api.error_string)>("nvrtcGetErrorString");
  api.create = library.function<decltype(api.create)>("nvrtcCreateProgram");
  api.destroy = library.function<decltype(api.destroy)>("nvrtcDestroyProgram");
  api.compile = library.function<decltype(api.compile)>("nvrtcCompileProgram");
  api.log_size = library.function<decltype(api.log_size)>("nvrtcGetProgramLogSize");
  api.log = library.function<decltype(api.log)>("nvrtcGetProgramLog");
  api.cubin_size = library.function<decltype(api.cubin_size)>("nvrtcGetCUBINSize");
  api.cubin = library.function<decltype(api.cubin)>("nvrtcGetCUBIN");
  api.add_name = library.function<decltype(api.add_name)>("nvrtcAddNameExpression");
  api.lowered_name = library.function<decltype(api.lowered_name)>("nvrtcGetLoweredName");
  const bool complete = api.version && api.error_string && api.create && api.destroy &&
                        api.compile && api.log_size && api.log && api.cubin_size && api.cubin &&
                        api.add_name && api.lowered_name;
  if (!complete) {
    api.error = library.name() + " lacks an NVRTC function (cubin output needs CUDA 11.1+)";
    return api;
  }
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(api.version), &info) != 0 && info.dli_fname != nullptr) {
    api.library_path = info.dli_fname;
  }
  return api;
}

const Nvrtc& nvrtc() {
  static const Nvrtc instance = load_nvrtc();
  return instance;
}

std::string describe(const Nvrtc& api, NvrtcCode code) {
  const char* text = api.error_string(code);
  return text != nullptr ? text : "NVRTC error " + std::to_string(code);
}

struct ProgramDeleter {
  const Nvrtc* api;
  void operator()(NvrtcProgramOpaque* program) const { api->destroy(&program); }
};
using Program = std::unique_ptr<NvrtcProgramOpaque, ProgramDeleter>;

std::string program_log(const Nvrtc& api, NvrtcProgram program) {
  size_t size = 0;
  if (api.log_size(program, &size) != kNvrtcSuccess || size <= 1) return {};
  std::string log(size, '\0');
  if (api.log(program, log.data()) != kNvrtcSuccess) return {};
  log.resize(size - 1);  // the terminating NUL
  return log;
}

}  // namespace

NvrtcResult nvrtc_compile(const NvrtcRequest& request) {
  NvrtcResult result;
  const Nvrtc& api = nvrtc();
  if (!api.error.empty()) {
    result.log = "NVRTC is not available: " + api.error;
    return result;
  }
  std::vector<const char*> header_contents;
  std::vector<const char*> header_names;
  for (const NvrtcHeader& header : request.headers) {
    header_contents.push_back(header.content.c_str());
    header_names.push_back(header.name.c_str());
  }
  NvrtcProgram raw = nullptr;
  if (NvrtcCode code = api.create(&raw, request.source.c_str(), request.source_name.c_str(),
                                  static_cast<int>(request.headers.size()), header_contents.data(),
                                  header_names.data());
      code != kNvrtcSuccess) {
    result.log = "nvrtcCreateProgram failed: " + describe(api, code);
    return result;
  }
  Program program(raw, ProgramDeleter{&api});
  if (NvrtcCode code = api.add_name(raw, request.kernel.c_str()); code != kNvrtcSuccess) {
    result.log = "nvrtcAddNameExpression(" + request.kernel + ") failed: " + describe(api, code);
    return result;
  }
  std::vector<const char*> options;
  for (const std::string& option : request.options) options.push_back(option.c_str());
  const NvrtcCode compiled = api.compile(raw, static_cast<int>(options.size()), options.data());
  result.log = program_log(api, raw);
  if (compiled != kNvrtcSuccess) {
    if (result.log.empty()) result.log = describe(api, compiled);
    return result;
  }
  const char* lowered = nullptr;
  if (NvrtcCode code = api.lowered_name(raw, request.kernel.c_str(), &lowered);
      code != kNvrtcSuccess || lowered == nullptr) {
    result.log += "\nno kernel named '" + request.kernel + "' in " + request.source_name;
    return result;
  }
  result.lowered_name = lowered;
  size_t size = 0;
  if (NvrtcCode code = api.cubin_size(raw, &size); code != kNvrtcSuccess || size == 0) {
    // NVRTC gives no cubin for a virtual architecture (compute_XX); the caller passes sm_XX.
    result.log += "\nno cubin produced (compile for a real architecture, sm_XX)";
    return result;
  }
  result.cubin.resize(size);
  if (NvrtcCode code = api.cubin(raw, result.cubin.data()); code != kNvrtcSuccess) {
    result.log += "\nnvrtcGetCUBIN failed: " + describe(api, code);
    result.cubin.clear();
    return result;
  }
  result.ok = true;
  return result;
}

std::string nvrtc_version() {
  const Nvrtc& api = nvrtc();
  if (!api.error.empty()) return "nvrtc unavailable: " + api.error;
  int major = 0;
  int minor = 0;
  api.version(&major, &minor);
  return "nvrtc " + std::to_string(major) + "." + std::to_string(minor);
}

std::vector<std::filesystem::path> nvrtc_include_dirs() {
  std::vector<std::filesystem::path> candidates;
#ifdef KERNELARC_CUDA_INCLUDE_DIR
  candidates.emplace_back(KERNELARC_CUDA_INCLUDE_DIR);
#endif
  // <root>/lib64/libnvrtc.so or <root>/targets/<arch>/lib/libnvrtc.so: headers in ../include.
  if (const Nvrtc& api = nvrtc(); !api.library_path.empty()) {
    std::error_code error;
    auto real = std::filesystem::canonical(api.library_path, error);
    if (!error) candidates.push_back(real.parent_path().parent_path() / "include");
  }
  std::vector<std::filesystem::path> dirs;
  for (const auto& candidate : candidates) {
    std::error_code error;
    if (!std::filesystem::exists(candidate / "cuda_fp16.h", error)) continue;
    dirs.push_back(candidate);
    // CUDA 13 moved libcu++ (<cuda/std/...>), CUB and Thrust under include/cccl.
    if (std::filesystem::exists(candidate / "cccl", error)) dirs.push_back(candidate / "cccl");
    break;
  }
  return dirs;
}

}  // namespace kernelarc
