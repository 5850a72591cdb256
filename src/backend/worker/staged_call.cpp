#include "backend/worker/staged_call.h"

#include <algorithm>

namespace kernelarc {
namespace {

// The candidate runs no code of its own during `part`: its other threads' CPU time then, and
// the wait before it, belong with the time between calls.
void count_as_idle(ParentObservation& observed, const ParentObservation& part) {
  observed.valid = observed.valid && part.valid;
  observed.idle_cpu_ns += part.idle_cpu_ns + part.other_cpu_ns;
  observed.idle_wall_ns += part.idle_wall_ns + part.wall_ns;
  observed.other_threads = std::max(observed.other_threads, part.other_threads);
  observed.tasks_after = std::max(observed.tasks_after, part.tasks_after);
}

}  // namespace

ExecuteResult execute_staged_call(const RequestExecutor& execute, ExecuteRequest request,
                                  bool collect) {
  request.warmup = 0;
  request.iterations = 1;
  request.phase = RequestPhase::Stage;
  const ExecuteResult stage = execute(request);
  if (stage.outcome != CallOutcome::Ok) return stage;
  request.phase = RequestPhase::Run;
  ExecuteResult run = execute(request);
  if (run.outcome != CallOutcome::Ok) return run;
  run.host_link_seconds += stage.host_link_seconds;
  count_as_idle(run.observed, stage.observed);
  // Collect follows every Run, as the worker checks its fingerprints there; an unchecked call
  // copies nothing back.
  request.phase = RequestPhase::Collect;
  request.copy_back = request.copy_back && collect;
  const ExecuteResult collected = execute(request);
  if (collected.outcome != CallOutcome::Ok) return collected;
  run.host_link_seconds += collected.host_link_seconds;
  count_as_idle(run.observed, collected.observed);
  return run;
}

ExecuteResult execute_staged_call(Worker& worker, ExecuteRequest request, bool collect) {
  return execute_staged_call([&worker](const ExecuteRequest& part) { return worker.execute(part); },
                             std::move(request), collect);
}

}  // namespace kernelarc
