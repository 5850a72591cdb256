#include "backend/worker/profile_run.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

#include "backend/backend.h"
#include "backend/device.h"
#include "backend/worker/shared_arena.h"
#include "backend/worker/staged_call.h"
#include "backend/worker/worker_execute.h"
#include "backend/worker/worker_protocol.h"
#include "core/error.h"

namespace kernelarc {
namespace {

ExecuteRequest read_request(const std::filesystem::path& path) {
  std::ifstream file(path);
  if (!file) throw InputError(path.string() + ": cannot read the profile request");
  std::stringstream text;
  text << file.rdbuf();
  return request_from_json(Json::parse(text.str()));
}

int run(const ProfileRunOptions& options) {
  std::unique_ptr<Device> device =
      backend_for(options.device).make_device(/*trace_activity=*/false);
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
  EntryPoint entry;
  if (const ExecuteResult loaded =
          load_entry_point(*device, options.library.string(), options.symbol, entry);
      loaded.outcome != CallOutcome::Ok)
    throw InputError(options.library.string() + ": " + loaded.message);
  BufferPool pool(*device);
  uint64_t call_counter = 0;
  StagedCall staged;
  // Each call staged, run and collected as the guard makes its calls (staged_call.h), through
  // the worker's execute loop in this process instead of the worker's pipe.
  const RequestExecutor execute = [&](const ExecuteRequest& part) {
    return execute_request(*device, pool, arena.bytes(), part, entry, call_counter, staged);
  };
  const int calls = request.warmup + request.iterations;
  for (int call = 0; call < calls; ++call) {
    const ExecuteResult result = execute_staged_call(execute, request);
    if (result.outcome != CallOutcome::Ok) {
      std::cout << "kernelarc profile-run: call " << call + 1 << " of " << calls
                << " failed: " << call_outcome_name(result.outcome)
                << (result.message.empty() ? "" : ": " + result.message) << std::endl;
      return 1;
    }
  }
  std::cout << "kernelarc profile-run: " << calls << " call(s) done" << std::endl;
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
