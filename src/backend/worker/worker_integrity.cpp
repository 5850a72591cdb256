#include "backend/worker/worker_integrity.h"

#include <dlfcn.h>
#include <link.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>

namespace kernelarc {
namespace {

constexpr std::array<std::string_view, 5> kCudaRuntimeSymbols = {
    "cudaEventElapsedTime", "cudaEventRecord", "cudaEventSynchronize", "cudaStreamSynchronize",
    "cudaDeviceSynchronize"};

std::string file_name(const char* path) {
  return std::filesystem::path(path).filename().string();
}

/// One line of /proc/self/maps: its range, permissions ("r-xp") and path ("" when anonymous).
struct Mapping {
  uintptr_t start = 0, end = 0;
  std::string permissions, path;
};

std::vector<Mapping> read_mappings() {
  std::vector<Mapping> mappings;
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    std::istringstream fields(line);
    std::string range, offset, device, inode;
    Mapping mapping;
    fields >> range >> mapping.permissions >> offset >> device >> inode;
    std::getline(fields >> std::ws, mapping.path);
    const auto dash = range.find('-');
    if (dash == std::string::npos) continue;
    mapping.start = std::stoull(range.substr(0, dash), nullptr, 16);
    mapping.end = std::stoull(range.substr(dash + 1), nullptr, 16);
    mappings.push_back(std::move(mapping));
  }
  return mappings;
}

/// Code the worker runs: every readable, executable mapping of a file, and the vDSO. Anonymous
/// executable memory is left out: a JIT (the CUDA driver's) may rewrite its own legitimately.
bool fingerprinted(const Mapping& mapping) {
  if (mapping.permissions.size() < 3 || mapping.permissions[0] != 'r' ||
      mapping.permissions[2] != 'x')
    return false;
  return mapping.path == "[vdso]" || (!mapping.path.empty() && mapping.path[0] == '/');
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
  // Every executable mapping present now: the worker, every library loaded beside it (not a
  // list of names), the loader and the vDSO. A candidate's library maps its own code later;
  // that code is not the worker's and is not checked.
  for (const Mapping& mapping : read_mappings()) {
    if (!fingerprinted(mapping)) continue;
    Region region;
    region.object = mapping.path == "[vdso]" ? mapping.path : file_name(mapping.path.c_str());
    region.kind = "executable mapping";
    region.start = reinterpret_cast<const unsigned char*>(mapping.start);
    region.size = mapping.end - mapping.start;
    region.hash = fingerprint(region.start, region.size);
    regions_.push_back(std::move(region));
  }
  // The relocation tables made read-only after loading (the GOT with -z relro -z now) of every
  // object loaded now, the worker executable included.
  struct Walk {
    std::vector<Region>& regions;
    std::string executable;
  } walk{regions_, executable_name()};
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* data) {
        Walk& walk = *static_cast<Walk*>(data);
        const bool main_program = info->dlpi_name == nullptr || info->dlpi_name[0] == '\0';
        std::string name = main_program ? walk.executable : file_name(info->dlpi_name);
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& header = info->dlpi_phdr[i];
          if (header.p_type != PT_GNU_RELRO) continue;
          Region region;
          region.object = name;
          region.kind = "RELRO region";
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
  // Hashing a region that is no longer mapped readable would fault. A region with nothing mapped
  // over it any more is code that cannot run (a library the driver unloaded); one mapped, but
  // not readable, or only in part, counts as changed.
  const std::vector<Mapping> mappings = read_mappings();
  enum class State { Readable, Unmapped, Changed };
  auto state = [&](const Region& region) {
    const auto start = reinterpret_cast<uintptr_t>(region.start), end = start + region.size;
    uintptr_t covered = start;
    bool any = false;
    for (const Mapping& mapping : mappings) {
      if (mapping.end <= start || mapping.start >= end) continue;
      any = true;
      if (mapping.permissions.empty() || mapping.permissions[0] != 'r') return State::Changed;
      if (mapping.start <= covered) covered = std::max(covered, mapping.end);
    }
    if (!any) return State::Unmapped;
    return covered >= end ? State::Readable : State::Changed;
  };
  for (const Region& region : regions_) {
    const State now = state(region);
    if (now == State::Unmapped) continue;
    if (now == State::Readable && fingerprint(region.start, region.size) == region.hash) continue;
    char range[64];
    std::snprintf(range, sizeof range, "%p, %zu bytes", static_cast<const void*>(region.start),
                  region.size);
    return "the candidate modified the worker: the " + region.kind + " of " + region.object +
           " (at " + range + ") " +
           (now == State::Readable ? "changed" : "was remapped unreadable") +
           " after the candidate was loaded or called";
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
