#include "core/large_block.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>

namespace kernelarc {
namespace {

std::size_t page_bytes() {
  static const auto bytes = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  return bytes;
}

std::size_t mapped_length(std::size_t bytes) {
  return (bytes + page_bytes() - 1) / page_bytes() * page_bytes();
}

}  // namespace

void* allocate_block(std::size_t bytes) {
  if (bytes < kLargeBlockBytes) return ::operator new(bytes);
  const std::size_t length = mapped_length(bytes);
  // Mapped one alignment longer, then trimmed to a 2 MiB boundary: only whole aligned 2 MiB
  // ranges become huge pages.
  void* mapped = ::mmap(nullptr, length + kLargeBlockBytes, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapped == MAP_FAILED) throw std::bad_alloc();
  auto* start = static_cast<std::byte*>(mapped);
  const auto address = reinterpret_cast<std::uintptr_t>(start);
  const std::size_t head = (kLargeBlockBytes - address % kLargeBlockBytes) % kLargeBlockBytes;
  if (head > 0) ::munmap(start, head);
  std::byte* block = start + head;
  ::munmap(block + length, kLargeBlockBytes - head);
  // Advice only: where transparent huge pages are off, the block has ordinary pages.
  ::madvise(block, length, MADV_HUGEPAGE);
  return block;
}

void free_block(void* block, std::size_t bytes) noexcept {
  if (bytes < kLargeBlockBytes) {
    ::operator delete(block);
    return;
  }
  ::munmap(block, mapped_length(bytes));
}

}  // namespace kernelarc
