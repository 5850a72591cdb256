// Checks that a candidate left the worker's own code alone.
//
// A candidate runs inside the worker, so it can mprotect and overwrite the code that times it
// (libc's clock_gettime, the CUDA runtime linked into the worker) or redirect the worker's calls
// through its relocation tables. Before the first candidate is loaded the worker fingerprints
// the executable segments and RELRO regions of itself and of the runtime libraries it relies on;
// after every load and every execute request it fingerprints them again. A candidate can also
// shadow a runtime function by defining it in its own library; load rejects that.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kernelarc {

class IntegrityCheck {
 public:
  /// Fingerprints the executable segments (PT_LOAD with PF_X) and PT_GNU_RELRO regions of the
  /// worker executable, the dynamic loader, libc, libstdc++, libm, libgcc_s, and of libcupti
  /// and libcudart when loaded.
  IntegrityCheck();

  /// Empty when every region is as fingerprinted; otherwise a message naming the first changed
  /// object and region ("the candidate modified the worker: ...").
  std::string changes() const;

  /// The objects fingerprinted, by file name.
  std::vector<std::string> objects() const;
  /// Bytes fingerprinted per check.
  std::size_t bytes() const;

 private:
  struct Region {
    std::string object;
    std::string kind;  ///< "executable segment" or "RELRO region"
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
