// Probe candidates for the sandbox and integrity tests: tiny libraries built at test time into
// a workspace's build cache (as the guard builds candidates) and run in a real worker. A probe's
// ka_run tries things and reports each as "name=ok;" or "name=<strerror>;" through
// ka_last_error, returning 1, so a test reads the report from a Failed result's message.
#pragma once

#include <string>
#include <vector>

#include "backend/worker/worker.h"
#include "backend_test_util.h"

namespace kernelarc::test {

/// Declarations every probe body may use: note(what, succeeded) appends to the report.
inline const char* kProbePrelude = R"(
#include <kernelarc/abi.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <string>
#include <thread>

static std::string report;
static void note(const char* what, bool succeeded) {
  report += std::string(what) + "=" + (succeeded ? "ok" : strerror(errno)) + ";";
}
extern "C" const char* ka_last_error(void) { return report.c_str(); }
)";

/// A workspace whose directory the worker must keep from its candidates, except build/.
class ProbeWorkspace {
 public:
  ProbeWorkspace() { std::filesystem::create_directories(root()); }

  std::filesystem::path root() const { return dir_ / "workspace"; }

  WorkerOptions options() const {
    WorkerOptions options;
    options.executable = KERNELARC_BINARY;
    options.call_timeout = std::chrono::seconds(10);
    options.memory_limit_bytes = std::size_t{4} << 30;
    options.protected_paths = {root()};
    options.readable_paths = {root() / "build"};
    return options;
  }

  /// Builds prelude + `code` (which defines ka_run, and anything else) into <workspace>/build.
  std::filesystem::path build(const std::string& code,
                              std::vector<std::string> extra_flags = {}) const {
    CpuCompileOptions compile = test_compile_options(root() / "build");
    compile.flags.insert(compile.flags.end(), extra_flags.begin(), extra_flags.end());
    CompileResult result =
        compile_cpu_solution(make_solution({{"probe.cpp", kProbePrelude + code}}), compile);
    if (!result.ok) throw std::runtime_error("cannot build the probe:\n" + result.log);
    return result.library;
  }

  /// Builds a probe whose ka_run runs `body` and then reports (returns 1).
  std::filesystem::path build_run(const std::string& body,
                                  std::vector<std::string> extra_flags = {}) const {
    return build(
        "extern \"C\" int ka_run(const ka_tensor*, int, ka_tensor*, int, void*, void*, "
        "size_t) {\n" +
            body + "\n  return 1;\n}\n",
        std::move(extra_flags));
  }

 private:
  kernelarc::testing::TempDir dir_;
};

/// One call of the loaded candidate, without tensors.
inline ExecuteResult call_once(Worker& worker) {
  worker.arena(64);
  ExecuteRequest request;
  request.flush_cache = false;
  return worker.execute(request);
}

/// Loads `library` and calls it once; the load's result when it fails.
inline ExecuteResult load_and_call(Worker& worker, const std::filesystem::path& library) {
  ExecuteResult loaded = worker.load(library, "ka_run");
  if (loaded.outcome != CallOutcome::Ok) return loaded;
  return call_once(worker);
}

}  // namespace kernelarc::test
