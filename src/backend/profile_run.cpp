#include "backend/profile_run.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

#include "backend/cuda_cubin_kernel.h"
#include "backend/cuda_launch.h"
#include "backend/device.h"
#include "backend/shared_arena.h"
#include "backend/worker_execute.h"
#include "backend/worker_integrity.h"
#include "backend/worker_protocol.h"
#include "core/error.h"

namespace kernelarc {
namespace {

std::unique_ptr<Device> make_profiled_device(const std::string& name) {
  if (name == "cpu") return make_cpu_device();
  const std::string ordinal = name == "cuda" ? "0" : name.substr(name.rfind(':') + 1);
  if (!name.starts_with("cuda") || ordinal.empty() ||
      ordinal.find_first_not_of("0123456789") != std::string::npos) {
    throw InputError("--device: expected cpu, cuda or cuda:N, got \"" + name + "\"");
  }
  return make_cuda_device(std::stoi(ordinal), /*trace_activity=*/false);
}

/// The candidate, loaded by the worker's rules (a library may not shadow the runtime).
EntryPoint load_entry(const std::filesystem::path& library, const std::string& symbol) {
  EntryPoint entry;
  std::string error;
  if (is_launch_plan(library)) {
    entry.kernel = load_cubin_kernel(library, error);
    if (!entry.kernel) throw InputError(library.string() + ": " + error);
    return entry;
  }
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) throw InputError(dlerror());
  if (std::string shadow = shadowed_symbol(handle); !shadow.empty()) throw InputError(shadow);
  entry.run = reinterpret_cast<ka_run_fn>(dlsym(handle, symbol.c_str()));
  if (!entry.run) {
    throw InputError("entry point \"" + symbol + "\" not found in " + library.string());
  }
  entry.last_error = reinterpret_cast<ka_last_error_fn>(dlsym(handle, "ka_last_error"));
  return entry;
}

ExecuteRequest read_request(const std::filesystem::path& path) {
  std::ifstream file(path);
  if (!file) throw InputError(path.string() + ": cannot read the profile request");
  std::stringstream text;
  text << file.rdbuf();
  return request_from_json(Json::parse(text.str()));
}

int run(const ProfileRunOptions& options) {
  std::unique_ptr<Device> device = make_profiled_device(options.device);
  const ExecuteRequest request = read_request(options.request);
  ArenaMapping arena(options.arena);
  if (std::string problem = request_problem(request, arena.bytes().size()); !problem.empty())
    throw InputError(options.request.string() + ": " + problem);
  if (!options.sandbox.scratch_directory.empty())
    setenv("TMPDIR", options.sandbox.scratch_directory.c_str(), /*overwrite=*/1);
  // As in the worker: after the device (and ncu's injection, which happens as the CUDA driver
  // starts), before the candidate.
  const SandboxStatus sandbox = enter_worker_sandbox(options.sandbox);
  std::cout << "kernelarc profile-run: sandbox " << sandbox.to_json().dump() << std::endl;
  const EntryPoint entry = load_entry(options.library, options.symbol);
  BufferPool pool(*device);
  uint64_t call_counter = 0;
  const ExecuteResult result =
      execute_request(*device, pool, arena.bytes(), request, entry, call_counter);
  if (result.outcome != CallOutcome::Ok) {
    std::cout << "kernelarc profile-run: the calls failed: " << call_outcome_name(result.outcome)
              << (result.message.empty() ? "" : ": " + result.message) << std::endl;
    return 1;
  }
  std::cout << "kernelarc profile-run: " << request.warmup + request.iterations << " call(s) done"
            << std::endl;
  return 0;
}

}  // namespace

int profile_run_main(const ProfileRunOptions& options) {
  const rlimit no_core{0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  const int log = open(options.log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (log < 0) {
    std::cerr << "kernelarc profile-run: cannot open the log " << options.log << ": "
              << std::strerror(errno) << std::endl;
    return 2;
  }
  std::fflush(stdout);
  std::fflush(stderr);
  dup2(log, STDOUT_FILENO);
  dup2(log, STDERR_FILENO);
  close(log);
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  setenv("OMP_WAIT_POLICY", "passive", /*overwrite=*/0);  // as in the worker
  try {
    return run(options);
  } catch (const std::exception& error) {
    std::cout << "kernelarc profile-run: " << error.what() << std::endl;
    return 1;
  }
}

}  // namespace kernelarc
