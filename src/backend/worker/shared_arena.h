// The shared-memory arena through which the parent and the worker exchange tensor bytes.
//
// A file created in a private (0700) temporary directory under /dev/shm (falling back to
// $TMPDIR and /tmp) and unlinked at once, together with its directory: it lives exactly as
// long as a process holds it open, so a parent killed without cleanup leaks no shared memory.
// The worker inherits the descriptor and opens it as /proc/self/fd/N. Both map it MAP_SHARED.
// Only the parent grows it; after a growth it tells the worker to remap before the next execute.
#pragma once

#include <cstddef>
#include <filesystem>
#include <span>

namespace kernelarc {

/// A new, already unlinked file opened read-write (close-on-exec), created in a private
/// directory under /dev/shm, $TMPDIR or /tmp. Throws InternalError when none is writable.
int create_anonymous_shared_file();

/// One process's read-write mapping of an arena file. Move-only.
class ArenaMapping {
 public:
  ArenaMapping() = default;
  /// Opens an arena file (a path, or /proc/self/fd/N) and maps its current length.
  /// Throws InternalError.
  explicit ArenaMapping(const std::filesystem::path& path);
  ~ArenaMapping();
  ArenaMapping(ArenaMapping&& other) noexcept;
  ArenaMapping& operator=(ArenaMapping&& other) noexcept;

  /// Maps the first `bytes` bytes of the file, replacing the previous mapping; earlier
  /// pointers become invalid. Throws std::bad_alloc when the address space is exhausted
  /// (the worker's memory limit), InternalError on other failures.
  void remap(std::size_t bytes);
  std::span<std::byte> bytes() const { return {data_, size_}; }
  int fd() const { return fd_; }

 private:
  explicit ArenaMapping(int fd) : fd_(fd) {}
  void unmap();
  friend class SharedArena;

  int fd_ = -1;
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

/// The parent's arena.
class SharedArena {
 public:
  /// Creates an empty arena. Throws InternalError when no temporary directory is writable.
  SharedArena();

  /// The arena, grown (never shrunk) to at least `bytes`. Growing reserves the memory up
  /// front, so a full /dev/shm is an InternalError here rather than a SIGBUS on first write.
  std::span<std::byte> reserve(std::size_t bytes);
  std::size_t size() const { return mapping_.bytes().size(); }
  /// The open file, to be inherited by the worker.
  int fd() const { return mapping_.fd(); }

 private:
  ArenaMapping mapping_;
};

}  // namespace kernelarc
