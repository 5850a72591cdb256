// Checks that a candidate left the worker's own code alone.
//
// A candidate runs inside the worker, so it can mprotect and overwrite the code that times it
// (libc's clock_gettime, the CUDA runtime linked into the worker, the hash library) or redirect
// the worker's calls through its relocation tables. Before the first candidate is loaded the
// worker fingerprints every executable mapping of a file in its address space (from
// /proc/self/maps: itself, every library loaded beside it, the loader, the vDSO) and the RELRO
// regions of every loaded object; after every load and every execute request it checks them
// again. Code the candidate maps later (its own library) is not the worker's and is not checked. A
// candidate can also shadow a runtime function by defining it in its own library; load rejects
// that.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kernelarc {

class IntegrityCheck {
 public:
  /// Fingerprints every readable, executable, file-backed mapping and the vDSO, and the
  /// PT_GNU_RELRO regions of every loaded object.
  IntegrityCheck();

  /// Empty when every region is still mapped readable and as fingerprinted; otherwise a message
  /// naming the first changed object and region ("the candidate modified the worker: ...").
  std::string changes() const;

  /// The objects fingerprinted, by file name.
  std::vector<std::string> objects() const;
  /// Bytes fingerprinted per check.
  std::size_t bytes() const;

 private:
  struct Region {
    std::string object;
    std::string kind;  ///< "executable mapping" or "RELRO region"
    const unsigned char* start = nullptr;
    std::size_t size = 0;
    uint64_t hash = 0;
  };
  std::vector<Region> regions_;
};

/// Runtime functions the worker's clock and synchronization depend on; a candidate library
/// must not define them itself.
const std::vector<std::string>& shadow_guarded_symbols();

/// The first of shadow_guarded_symbols() that the library behind `handle` (a dlopen handle)
/// defines itself, with a message containing "shadows"; empty when none. The CUDA runtime's
/// names are exempt in a library that carries its own static copy of that runtime (nvcc's
/// default), which serves only the candidate: the worker's runtime is linked into the worker.
std::string shadowed_symbol(void* handle);

}  // namespace kernelarc
