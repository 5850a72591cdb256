#include "backend/worker/worker_sandbox.h"

#include <fcntl.h>
#include <link.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/landlock.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>

#include "backend/child_environment.h"

extern char** environ;

namespace kernelarc {
namespace {

namespace fs = std::filesystem;

// ---- seccomp ---------------------------------------------------------------------------------

#if defined(__x86_64__)
constexpr uint32_t kAuditArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
constexpr uint32_t kAuditArch = AUDIT_ARCH_AARCH64;
#else
constexpr uint32_t kAuditArch = 0;
#endif

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "the filter reads the low 32 bits of a syscall argument at its first byte");

constexpr uint32_t kKill = SECCOMP_RET_KILL_PROCESS;
constexpr uint32_t kAllow = SECCOMP_RET_ALLOW;

constexpr uint32_t fail_with(int error) {
  return SECCOMP_RET_ERRNO | (static_cast<uint32_t>(error) & SECCOMP_RET_DATA);
}

constexpr uint32_t arg_offset(int index) {
  return offsetof(seccomp_data, args) + 8 * static_cast<uint32_t>(index);
}

class FilterBuilder {
 public:
  FilterBuilder() {
    load(offsetof(seccomp_data, arch));
    code_.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kAuditArch, 1, 0));
    ret(kKill);  // another calling convention (i386, x32) has other numbers: refuse them all
    load(offsetof(seccomp_data, nr));
#if defined(__x86_64__)
    code_.push_back(BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u, 0, 1));  // x32 numbers
    ret(kKill);
#endif
  }

  /// `action` for every call of `nr`.
  void always(long nr, uint32_t action) {
    code_.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, static_cast<uint32_t>(nr), 0, 1));
    ret(action);
  }

  /// Allows `nr` when the low 32 bits of argument `index` are one of `allowed`, else `deny`.
  void allow_values(long nr, int index, std::vector<uint32_t> allowed, uint32_t deny) {
    auto count = static_cast<uint8_t>(allowed.size());
    code_.push_back(
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, static_cast<uint32_t>(nr), 0, uint8_t(count + 3)));
    load(arg_offset(index));
    for (uint8_t i = 0; i < count; ++i)
      code_.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, allowed[i], uint8_t(count - i), 0));
    ret(deny);
    ret(kAllow);
  }

  /// Allows `nr` when argument `index` has a bit of `mask` set, else `deny`.
  void allow_flag(long nr, int index, uint32_t mask, uint32_t deny) {
    code_.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, static_cast<uint32_t>(nr), 0, 4));
    load(arg_offset(index));
    code_.push_back(BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, mask, 1, 0));
    ret(deny);
    ret(kAllow);
  }

  std::vector<sock_filter> finish() {
    ret(kAllow);
    return std::move(code_);
  }

 private:
  void load(uint32_t offset) {
    code_.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offset));
  }
  void ret(uint32_t action) {
    code_.push_back(BPF_STMT(BPF_RET | BPF_K, action));
  }

  std::vector<sock_filter> code_;
};

std::vector<sock_filter> worker_filter(pid_t self, bool allow_programs) {
  auto own = static_cast<uint32_t>(self);
  FilterBuilder filter;
  if (allow_programs) {
    for (long nr : {long{__NR_ptrace}, long{__NR_process_vm_readv}, long{__NR_process_vm_writev}})
      filter.always(nr, kKill);
    filter.always(__NR_io_uring_setup, fail_with(EPERM));
    filter.allow_values(__NR_socket, 0, {AF_UNIX, AF_NETLINK}, fail_with(EPERM));
    return filter.finish();
  }
  // Starting processes or programs, and reading or writing other processes, end the worker.
  for (long nr : {long{__NR_execve}, long{__NR_execveat}, long{__NR_ptrace},
                  long{__NR_process_vm_readv}, long{__NR_process_vm_writev}})
    filter.always(nr, kKill);
#ifdef __NR_fork
  filter.always(__NR_fork, kKill);
#endif
#ifdef __NR_vfork
  filter.always(__NR_vfork, kKill);
#endif
  filter.allow_flag(__NR_clone, 0, CLONE_THREAD, kKill);
  // clone3 passes its flags in memory, which a filter cannot read; glibc then uses clone.
  filter.always(__NR_clone3, fail_with(ENOSYS));
  // Signals only to the worker itself (0: its own process group, which it leads alone).
  filter.allow_values(__NR_kill, 0, {own, 0}, fail_with(EPERM));
  filter.allow_values(__NR_tkill, 0, {own}, fail_with(EPERM));
  filter.allow_values(__NR_tgkill, 0, {own}, fail_with(EPERM));
  filter.allow_values(__NR_rt_sigqueueinfo, 0, {own}, fail_with(EPERM));
  filter.allow_values(__NR_rt_tgsigqueueinfo, 0, {own}, fail_with(EPERM));
  for (long nr : {long{__NR_pidfd_send_signal}, long{__NR_pidfd_getfd}, long{__NR_process_madvise},
                  long{__NR_io_uring_setup}})
    filter.always(nr, fail_with(EPERM));  // io_uring would open sockets past the socket rule
  filter.allow_values(__NR_socket, 0, {AF_UNIX, AF_NETLINK}, fail_with(EPERM));
  return filter.finish();
}

std::string install_seccomp(bool allow_programs) {
  if (kAuditArch == 0) return "no filter for this architecture (only x86_64 and aarch64)";
  uint32_t action = kKill;
  if (syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action) != 0)
    return std::string("the kernel cannot kill a whole process from a filter: ") +
           std::strerror(errno);
  std::vector<sock_filter> code = worker_filter(getpid(), allow_programs);
  sock_fprog program{static_cast<unsigned short>(code.size()), code.data()};
  // TSYNC: the threads the device already started (the CUDA driver's) get the filter too.
  if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &program) != 0)
    return std::string("seccomp(SECCOMP_SET_MODE_FILTER) failed: ") + std::strerror(errno);
  return {};
}

// ---- Landlock --------------------------------------------------------------------------------
// The system's <linux/landlock.h> may predate the ABI the kernel offers, so the later fields and
// flags are spelled out here (values from the kernel's UAPI).

struct RulesetAttr {
  uint64_t handled_access_fs = 0;
  uint64_t handled_access_net = 0;  // ABI 4
  uint64_t scoped = 0;              // ABI 6
};

constexpr uint64_t kFsExecute = 1ull << 0;
constexpr uint64_t kFsWriteFile = 1ull << 1;
constexpr uint64_t kFsReadFile = 1ull << 2;
constexpr uint64_t kFsReadDir = 1ull << 3;
constexpr uint64_t kFsMakeAndRemove = 0x1ff0;  // REMOVE_DIR ... MAKE_SYM (bits 4 to 12)
constexpr uint64_t kFsRefer = 1ull << 13;      // ABI 2
constexpr uint64_t kFsTruncate = 1ull << 14;   // ABI 3
constexpr uint64_t kNetBindTcp = 1ull << 0;    // ABI 4
constexpr uint64_t kNetConnectTcp = 1ull << 1;
constexpr uint64_t kScopeAbstractUnixSocket = 1ull << 0;  // ABI 6
constexpr uint64_t kScopeSignal = 1ull << 1;

constexpr uint64_t kFileAccess = kFsExecute | kFsWriteFile | kFsReadFile | kFsTruncate;

/// An fd closed when it goes out of scope.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

class Ruleset {
 public:
  Ruleset(int abi, uint64_t handled) : handled_(handled) {
    RulesetAttr attr;
    attr.handled_access_fs = handled;
    std::size_t size = sizeof(uint64_t);
    if (abi >= 4) {
      attr.handled_access_net = kNetBindTcp | kNetConnectTcp;  // no rule: no TCP at all
      size = 2 * sizeof(uint64_t);
    }
    if (abi >= 6) {
      attr.scoped = kScopeAbstractUnixSocket | kScopeSignal;
      size = sizeof attr;
    }
    fd_ = static_cast<int>(syscall(SYS_landlock_create_ruleset, &attr, size, 0));
  }
  ~Ruleset() {
    if (fd_ >= 0) close(fd_);
  }
  Ruleset(const Ruleset&) = delete;
  Ruleset& operator=(const Ruleset&) = delete;

  int fd() const { return fd_; }

  /// Grants `access` beneath `path` (only its file rights when it is not a directory).
  /// A path that cannot be opened gets no rule: access there stays denied.
  void allow(const fs::path& path, uint64_t access) {
    Fd target(open(path.c_str(), O_PATH | O_CLOEXEC | O_NOFOLLOW));
    struct stat info {};
    if (target.get() < 0 || fstat(target.get(), &info) != 0) return;
    if (S_ISLNK(info.st_mode)) return;
    if (!S_ISDIR(info.st_mode)) access &= kFileAccess;
    landlock_path_beneath_attr rule{};
    rule.allowed_access = access & handled_;
    rule.parent_fd = target.get();
    syscall(SYS_landlock_add_rule, fd_, LANDLOCK_RULE_PATH_BENEATH, &rule, 0);
  }

 private:
  uint64_t handled_;
  int fd_ = -1;
};

std::string install_landlock(const SandboxOptions& options, int& abi) {
  long version = syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  if (version <= 0)
    return std::string("the kernel offers no Landlock: ") +
           (errno == EOPNOTSUPP ? "disabled at boot" : std::strerror(errno));
  const uint64_t read = kFsReadFile | kFsReadDir | kFsExecute;
  uint64_t write = kFsWriteFile | kFsMakeAndRemove;
  if (version >= 2) write |= kFsRefer;
  if (version >= 3) write |= kFsTruncate;
  Ruleset ruleset(static_cast<int>(version), read | write);
  if (ruleset.fd() < 0)
    return std::string("landlock_create_ruleset failed: ") + std::strerror(errno);

  for (const fs::path& root : allowed_read_roots(options.protected_paths, options.readable_paths)) {
    if (root != "/proc") {
      ruleset.allow(root, read);
      continue;
    }
    // Of the processes only the worker itself: Landlock denies /proc/<parent>/mem but not
    // environ, where the parent's (and its shell's) API keys are.
    const std::string self = std::to_string(getpid());
    std::error_code error;
    for (fs::directory_iterator it(root, error), end; !error && it != end; it.increment(error)) {
      std::string name = it->path().filename().string();
      bool process = name.find_first_not_of("0123456789") == std::string::npos;
      if (!process || name == self) ruleset.allow(it->path(), read);
    }
  }
  if (!options.scratch_directory.empty()) ruleset.allow(options.scratch_directory, read | write);
  for (const fs::path& path : options.writable_paths) {
    std::error_code missing;
    if (fs::is_directory(path, missing)) ruleset.allow(path, read | write);
  }
  // Devices the worker and the CUDA driver open for writing; ioctls are not restricted.
  const uint64_t device = kFsReadFile | kFsWriteFile | kFsTruncate;
  for (const char* name : {"/dev/null", "/dev/zero", "/dev/urandom"}) ruleset.allow(name, device);
  std::error_code error;
  for (fs::directory_iterator it("/dev", error), end; !error && it != end; it.increment(error))
    if (it->path().filename().string().rfind("nvidia", 0) == 0)
      ruleset.allow(it->path(), device | kFsReadDir);

  if (syscall(SYS_landlock_restrict_self, ruleset.fd(), 0) != 0)
    return std::string("landlock_restrict_self failed: ") + std::strerror(errno);
  abi = static_cast<int>(version);
  return {};
}

bool within(const fs::path& path, const fs::path& directory) {
  auto [end, rest] = std::mismatch(directory.begin(), directory.end(), path.begin(), path.end());
  return end == directory.end();
}

fs::path absolute_clean(const fs::path& path) {
  std::error_code error;
  fs::path canonical = fs::weakly_canonical(fs::absolute(path), error);
  return (error ? fs::absolute(path) : canonical).lexically_normal();
}

}  // namespace

nlohmann::json SandboxStatus::to_json() const {
  nlohmann::json json = {{"seccomp", seccomp}, {"landlock_abi", landlock_abi}};
  if (!seccomp_note.empty()) json["seccomp_note"] = seccomp_note;
  if (!landlock_note.empty()) json["landlock_note"] = landlock_note;
  return json;
}

std::vector<fs::path> readable_roots(const std::vector<fs::path>& protected_paths,
                                     const std::vector<fs::path>& readable_paths) {
  std::vector<fs::path> hidden;
  for (const fs::path& path : protected_paths) hidden.push_back(absolute_clean(path));
  auto is_hidden = [&](const fs::path& path) {
    return std::any_of(hidden.begin(), hidden.end(),
                       [&](const fs::path& root) { return within(path, root); });
  };
  // Every directory on the way to a protected one, and those directories themselves.
  std::set<fs::path> on_the_way;
  for (const fs::path& path : hidden)
    for (fs::path step = path; !step.empty(); step = step.parent_path()) {
      on_the_way.insert(step);
      if (step == step.root_path()) break;
    }
  std::vector<fs::path> roots;
  if (hidden.empty()) roots.emplace_back("/");
  for (const fs::path& ancestor : on_the_way) {
    if (is_hidden(ancestor)) continue;
    std::error_code error;
    for (fs::directory_iterator it(ancestor, error), end; !error && it != end;
         it.increment(error)) {
      const fs::path& child = it->path();
      if (on_the_way.count(child) || is_hidden(child)) continue;
      if (it->is_symlink(error)) continue;
      roots.push_back(child);
    }
  }
  for (const fs::path& path : readable_paths) {
    fs::path clean = absolute_clean(path);
    if (fs::exists(clean)) roots.push_back(clean);
  }
  return roots;
}

static std::vector<fs::path> system_read_roots() {
  std::vector<fs::path> roots = {"/usr",  "/lib", "/lib32", "/lib64", "/libx32", "/bin",
                                 "/sbin", "/etc", "/opt",   "/sys",   "/proc"};
  // Where the libraries loaded now live (a toolkit or runtime outside /usr, a virtual
  // environment's CUDA libraries), and the loader's search path: a candidate links against them.
  std::set<fs::path> directories;
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* data) {
        if (info->dlpi_name && info->dlpi_name[0] == '/')
          static_cast<std::set<fs::path>*>(data)->insert(fs::path(info->dlpi_name).parent_path());
        return 0;
      },
      &directories);
  if (const char* search = std::getenv("LD_LIBRARY_PATH")) {
    std::string list(search);
    for (std::size_t begin = 0; begin <= list.size();) {
      const std::size_t end = std::min(list.find(':', begin), list.size());
      if (end > begin && list[begin] == '/') directories.insert(list.substr(begin, end - begin));
      begin = end + 1;
    }
  }
  roots.insert(roots.end(), directories.begin(), directories.end());
  return roots;
}

std::vector<fs::path> allowed_read_roots(const std::vector<fs::path>& protected_paths,
                                         const std::vector<fs::path>& readable_paths) {
  if (protected_paths.empty()) return readable_roots({}, readable_paths);
  std::vector<fs::path> hidden;
  for (const fs::path& path : protected_paths) hidden.push_back(absolute_clean(path));
  std::vector<fs::path> roots;
  for (const fs::path& listed : system_read_roots()) {
    const fs::path root = absolute_clean(listed);
    std::error_code missing;
    if (!fs::exists(root, missing)) continue;
    if (std::any_of(hidden.begin(), hidden.end(),
                    [&](const fs::path& path) { return within(root, path); }))
      continue;
    std::vector<fs::path> inside;
    for (const fs::path& path : hidden)
      if (within(path, root)) inside.push_back(path);
    if (inside.empty()) {
      roots.push_back(root);
      continue;
    }
    // A protected directory beneath an allowed one: everything there but it.
    for (const fs::path& part : readable_roots(inside, {}))
      if (within(part, root) && part != root) roots.push_back(part);
  }
  for (const fs::path& path : readable_paths) {
    fs::path clean = absolute_clean(path);
    if (fs::exists(clean)) roots.push_back(clean);
  }
  std::sort(roots.begin(), roots.end());
  roots.erase(std::unique(roots.begin(), roots.end()), roots.end());
  return roots;
}

bool is_secret_variable(std::string_view name) {
  std::string upper(name);
  std::transform(upper.begin(), upper.end(), upper.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  for (std::string_view word : {"KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL"})
    if (upper.find(word) != std::string::npos) return true;
  return false;
}

std::vector<std::string> environment_without_secrets() {
  // An allowlist, not the name filter: a key in a variable of an innocent name (LLM_AUTH) must
  // not reach a kernel either.
  std::vector<std::string> entries = child_environment();
  std::erase_if(entries, [](const std::string& entry) {
    return is_secret_variable(std::string_view(entry).substr(0, entry.find('=')));
  });
  return entries;
}

SandboxStatus enter_worker_sandbox(const SandboxOptions& options) {
  SandboxStatus status;
  // Required for an unprivileged seccomp filter and Landlock; also keeps setuid programs inert.
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    status.seccomp_note = status.landlock_note =
        std::string("prctl(PR_SET_NO_NEW_PRIVS) failed: ") + std::strerror(errno);
    return status;
  }
  status.landlock_note = install_landlock(options, status.landlock_abi);
  status.seccomp_note = install_seccomp(options.allow_programs);
  status.seccomp = status.seccomp_note.empty();
  return status;
}

}  // namespace kernelarc
