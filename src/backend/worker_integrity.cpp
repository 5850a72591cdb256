#include "backend/worker_integrity.h"

#include <dlfcn.h>
#include <link.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string_view>

namespace kernelarc {
namespace {

// File-name prefixes of the shared objects whose code the worker's timing runs through.
constexpr std::array<std::string_view, 7> kWatchedPrefixes = {
    "ld-linux", "libc.so", "libstdc++.so", "libm.so", "libgcc_s.so", "libcupti", "libcudart.so"};

constexpr std::array<std::string_view, 5> kCudaRuntimeSymbols = {
    "cudaEventElapsedTime", "cudaEventRecord", "cudaEventSynchronize", "cudaStreamSynchronize",
    "cudaDeviceSynchronize"};

std::string file_name(const char* path) {
  return std::filesystem::path(path).filename().string();
}

bool watched(const std::string& name) {
  for (std::string_view prefix : kWatchedPrefixes)
    if (name.rfind(prefix, 0) == 0) return true;
  return false;
}

std::string executable_name() {
  char path[4096];
  ssize_t length = readlink("/proc/self/exe", path, sizeof path - 1);
  if (length <= 0) return "the worker executable";
  path[length] = '\0';
  return file_name(path) + " (the worker executable)";
}

uint64_t fingerprint(const unsigned char* start, std::size_t size) {
  return XXH3_64bits(start, size);
}

/// Whether `symbol` resolves, from `handle`, to a definition inside that library itself.
bool defines_itself(void* handle, const char* library, const char* symbol) {
  void* address = dlsym(handle, symbol);
  Dl_info info{};
  return address && dladdr(address, &info) != 0 && info.dli_fname &&
         std::strcmp(info.dli_fname, library) == 0;
}

}  // namespace

IntegrityCheck::IntegrityCheck() {
  struct Walk {
    std::vector<Region>& regions;
    std::string executable;
  } walk{regions_, executable_name()};
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* data) {
        Walk& walk = *static_cast<Walk*>(data);
        // The executable is the object without a name; the vDSO and others are skipped.
        const bool main_program = info->dlpi_name == nullptr || info->dlpi_name[0] == '\0';
        std::string name = main_program ? walk.executable : file_name(info->dlpi_name);
        if (!main_program && !watched(name)) return 0;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& header = info->dlpi_phdr[i];
          const bool code = header.p_type == PT_LOAD && (header.p_flags & PF_X) != 0;
          if (!code && header.p_type != PT_GNU_RELRO) continue;
          Region region;
          region.object = name;
          region.kind = code ? "executable segment" : "RELRO region";
          region.start = reinterpret_cast<const unsigned char*>(info->dlpi_addr + header.p_vaddr);
          region.size = header.p_memsz;
          region.hash = fingerprint(region.start, region.size);
          walk.regions.push_back(std::move(region));
        }
        return 0;
      },
      &walk);
}

std::string IntegrityCheck::changes() const {
  for (const Region& region : regions_) {
    if (fingerprint(region.start, region.size) == region.hash) continue;
    char range[64];
    std::snprintf(range, sizeof range, "%p, %zu bytes", static_cast<const void*>(region.start),
                  region.size);
    return "the candidate modified the worker: the " + region.kind + " of " + region.object +
           " (at " + range + ") changed after the candidate was loaded or called";
  }
  return {};
}

std::vector<std::string> IntegrityCheck::objects() const {
  std::vector<std::string> names;
  for (const Region& region : regions_)
    if (names.empty() || names.back() != region.object) names.push_back(region.object);
  return names;
}

std::size_t IntegrityCheck::bytes() const {
  std::size_t total = 0;
  for (const Region& region : regions_) total += region.size;
  return total;
}

const std::vector<std::string>& shadow_guarded_symbols() {
  static const std::vector<std::string> symbols = {"clock_gettime",
                                                   "gettimeofday",
                                                   "clock",
                                                   "time",
                                                   "nanosleep",
                                                   "cudaEventElapsedTime",
                                                   "cudaEventRecord",
                                                   "cudaEventSynchronize",
                                                   "cudaStreamSynchronize",
                                                   "cudaDeviceSynchronize",
                                                   "cuCtxSynchronize",
                                                   "cuptiActivityEnable",
                                                   "cuptiActivityDisable",
                                                   "cuptiActivityFlushAll",
                                                   "cuptiActivityGetNextRecord",
                                                   "dlopen",
                                                   "dlsym"};
  return symbols;
}

std::string shadowed_symbol(void* handle) {
  link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || !map || !map->l_name) return {};
  const char* library = map->l_name;
  const bool own_cuda_runtime = defines_itself(handle, library, "__cudaRegisterFatBinary");
  for (const std::string& symbol : shadow_guarded_symbols()) {
    if (own_cuda_runtime && std::find(kCudaRuntimeSymbols.begin(), kCudaRuntimeSymbols.end(),
                                      symbol) != kCudaRuntimeSymbols.end())
      continue;
    if (defines_itself(handle, library, symbol.c_str()))
      return std::string(library) + " shadows " + symbol +
             ", which the worker's clock or synchronization depends on: a candidate library "
             "must not define it";
  }
  return {};
}

}  // namespace kernelarc
