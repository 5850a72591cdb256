// Memory for buffers of megabytes to gigabytes: the tensors the guard moves (the oracle's draws
// and expected outputs, their copies). Each such block is a mapping of its own, aligned to 2 MiB
// and advised to use transparent huge pages. Every page a process touches first costs a fault,
// and a fresh 117 MiB tensor is 30,000 of them: on the 2-core CPU machine, a virtual machine
// whose page faults are expensive, touching one took 1.0-1.2 s in 4 KiB pages and 0.02-0.04 s in
// huge pages (0.59 s the first time, while the kernel assembled them), beside a CI run.
#pragma once

#include <cstddef>
#include <new>
#include <type_traits>
#include <utility>

namespace kernelarc {

/// Blocks of at least this many bytes are mapped as above; smaller ones come from the heap.
inline constexpr std::size_t kLargeBlockBytes = std::size_t{2} << 20;

/// `bytes` of memory, its contents unspecified; throws std::bad_alloc.
void* allocate_block(std::size_t bytes);
/// Frees a block of allocate_block(bytes).
void free_block(void* block, std::size_t bytes) noexcept;

/// An allocator over allocate_block whose containers default-initialize their elements: a
/// vector's resize() leaves the new bytes as they are instead of zeroing them, for storage that
/// is written in full at once (a tensor read from a file). Zeroes where wanted come from a value,
/// as in resize(n, std::byte{0}).
template <class T>
struct BlockAllocator {
  using value_type = T;

  BlockAllocator() = default;
  template <class U>
  BlockAllocator(const BlockAllocator<U>& /*other*/) noexcept {}  // NOLINT: stateless

  T* allocate(std::size_t n) { return static_cast<T*>(allocate_block(n * sizeof(T))); }
  void deallocate(T* block, std::size_t n) noexcept { free_block(block, n * sizeof(T)); }

  template <class U>
  void construct(U* at) noexcept(std::is_nothrow_default_constructible_v<U>) {
    ::new (static_cast<void*>(at)) U;
  }
  template <class U, class... Args>
  void construct(U* at, Args&&... args) {
    ::new (static_cast<void*>(at)) U(std::forward<Args>(args)...);
  }

  template <class U>
  bool operator==(const BlockAllocator<U>& /*other*/) const noexcept {
    return true;
  }
};

}  // namespace kernelarc
