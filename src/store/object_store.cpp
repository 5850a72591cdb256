#include "store/object_store.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>

#include <fmt/format.h>

#include "core/error.h"
#include "core/hash.h"

namespace kernelarc {
namespace {

constexpr size_t kKeyLength = 32;

bool is_key(std::string_view key) {
  if (key.size() != kKeyLength) return false;
  for (char digit : key) {
    if (!((digit >= '0' && digit <= '9') || (digit >= 'a' && digit <= 'f'))) return false;
  }
  return true;
}

[[noreturn]] void throw_io_error(const std::filesystem::path& path, std::string_view action) {
  throw InternalError(fmt::format("{}: {}: {}", path.string(), action, std::strerror(errno)));
}

class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  int get() const { return fd_; }
  /// Closes now, so that a failing close is reported rather than ignored.
  int close() { return ::close(std::exchange(fd_, -1)); }

 private:
  int fd_;
};

void write_all(int fd, std::string_view bytes, const std::filesystem::path& path) {
  while (!bytes.empty()) {
    const ssize_t written = ::write(fd, bytes.data(), bytes.size());
    if (written < 0) {
      if (errno == EINTR) continue;
      throw_io_error(path, "write");
    }
    bytes.remove_prefix(static_cast<size_t>(written));
  }
}

// The rename itself is durable only once the directory entry is flushed.
void sync_directory(const std::filesystem::path& directory) {
  FileDescriptor fd(::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.get() < 0 || ::fsync(fd.get()) != 0) throw_io_error(directory, "fsync");
}

// Unique across processes (pid) and threads (counter); the leading dot and the suffix keep it
// from ever looking like an object.
std::filesystem::path temporary_path(const std::filesystem::path& final_path) {
  static std::atomic<uint64_t> counter{0};
  return final_path.parent_path() / fmt::format(".{}.{}.{}.tmp", final_path.filename().string(),
                                                ::getpid(), counter.fetch_add(1));
}

void write_atomically(const std::filesystem::path& path, std::string_view bytes) {
  const std::filesystem::path temporary = temporary_path(path);
  FileDescriptor fd(::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444));
  if (fd.get() < 0) throw_io_error(temporary, "create");
  try {
    write_all(fd.get(), bytes, temporary);
    if (::fsync(fd.get()) != 0) throw_io_error(temporary, "fsync");
    if (fd.close() != 0) throw_io_error(temporary, "close");
    // Another writer of the same content may have won the race; both files hold the same
    // bytes, so replacing its file is harmless.
    if (::rename(temporary.c_str(), path.c_str()) != 0) throw_io_error(path, "rename");
  } catch (...) {
    ::unlink(temporary.c_str());
    throw;
  }
  sync_directory(path.parent_path());
}

}  // namespace

ObjectStore::ObjectStore(std::filesystem::path root) : root_(std::move(root)) {
  std::error_code error;
  std::filesystem::create_directories(root_, error);
  if (error) {
    throw InputError(
        fmt::format("{}: cannot create the object store: {}", root_.string(), error.message()));
  }
}

std::filesystem::path ObjectStore::path_of(std::string_view key) const {
  if (!is_key(key)) {
    throw InputError(
        fmt::format("object key \"{}\": expected {} lowercase hex digits", key, kKeyLength));
  }
  return root_ / key.substr(0, 2) / key.substr(2);
}

std::string ObjectStore::put(std::string_view bytes) {
  std::string key = content_hash(bytes);
  const std::filesystem::path path = path_of(key);
  if (std::filesystem::exists(path)) return key;
  std::error_code error;
  std::filesystem::create_directories(path.parent_path(), error);
  if (error) {
    throw InternalError(
        fmt::format("{}: cannot create: {}", path.parent_path().string(), error.message()));
  }
  write_atomically(path, bytes);
  return key;
}

std::string ObjectStore::get(std::string_view key) const {
  const std::filesystem::path path = path_of(key);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: object {} is missing", path.string(), key));
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (in.bad()) throw InputError(fmt::format("{}: cannot read object {}", path.string(), key));
  std::string content = std::move(bytes).str();
  const std::string actual = content_hash(content);
  if (actual != key) {
    throw InputError(fmt::format("{}: corrupt object: its content hashes to {}, expected {}",
                                 path.string(), actual, key));
  }
  return content;
}

bool ObjectStore::has(std::string_view key) const {
  return std::filesystem::exists(path_of(key));
}

}  // namespace kernelarc
