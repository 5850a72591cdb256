#include "backend/worker/shared_arena.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"

namespace kernelarc {
namespace {

std::string errno_text(const std::string& what) {
  return what + ": " + std::strerror(errno);
}

}  // namespace

int create_anonymous_shared_file() {
  std::vector<std::string> bases = {"/dev/shm"};
  if (const char* tmpdir = std::getenv("TMPDIR"); tmpdir && *tmpdir) bases.emplace_back(tmpdir);
  bases.emplace_back("/tmp");
  for (const std::string& base : bases) {
    std::string directory = base + "/kernelarc-XXXXXX";
    if (!mkdtemp(directory.data())) continue;  // mkdtemp creates it with mode 0700
    std::string path = directory + "/shared";
    int fd = open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    unlink(path.c_str());
    rmdir(directory.c_str());
    if (fd >= 0) return fd;
  }
  throw InternalError(errno_text("cannot create a shared file in /dev/shm, $TMPDIR or /tmp"));
}

ArenaMapping::ArenaMapping(const std::filesystem::path& path) {
  int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) throw InternalError(errno_text("cannot open shared arena " + path.string()));
  ArenaMapping mapping(fd);  // closes the fd if anything below throws
  struct stat info {};
  if (fstat(fd, &info) != 0) throw InternalError(errno_text("cannot stat " + path.string()));
  mapping.remap(static_cast<std::size_t>(info.st_size));
  *this = std::move(mapping);
}

ArenaMapping::~ArenaMapping() {
  unmap();
  if (fd_ >= 0) close(fd_);
}

ArenaMapping::ArenaMapping(ArenaMapping&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)) {}

ArenaMapping& ArenaMapping::operator=(ArenaMapping&& other) noexcept {
  if (this != &other) {
    unmap();
    if (fd_ >= 0) close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

void ArenaMapping::unmap() {
  if (data_) munmap(data_, size_);
  data_ = nullptr;
  size_ = 0;
}

void ArenaMapping::remap(std::size_t bytes) {
  unmap();
  if (bytes == 0) return;
  void* mapped = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
  if (mapped == MAP_FAILED) {
    if (errno == ENOMEM) throw std::bad_alloc();
    throw InternalError(
        errno_text("cannot map " + std::to_string(bytes) + " bytes of the shared arena"));
  }
  data_ = static_cast<std::byte*>(mapped);
  size_ = bytes;
}

SharedArena::SharedArena() : mapping_(create_anonymous_shared_file()) {}

std::span<std::byte> SharedArena::reserve(std::size_t bytes) {
  if (bytes <= size()) return mapping_.bytes();
  constexpr std::size_t kGranule = std::size_t{1} << 20;
  std::size_t grown = (bytes + kGranule - 1) / kGranule * kGranule;
  int error = posix_fallocate(mapping_.fd(), 0, static_cast<off_t>(grown));
  if (error != 0) {
    throw InternalError("cannot grow the shared arena to " + std::to_string(grown) +
                        " bytes: " + std::strerror(error));
  }
  mapping_.remap(grown);
  return mapping_.bytes();
}

}  // namespace kernelarc
