// One call as the three requests of RequestPhase (Stage, Run, Collect), so that what the
// parent measures of the Run request is the call and little else. The one way a candidate's
// call is staged and run: the guard's calls go through its worker's pipe, and the calls that
// `kernelarc profile-run` makes for Nsight Compute go through its own execute loop, both here.
#pragma once

#include <functional>

#include "backend/worker/worker.h"

namespace kernelarc {

/// Executes one request of a call: Worker::execute in the guard, execute_request (worker_execute.h)
/// inside the profiled process.
using RequestExecutor = std::function<ExecuteResult(const ExecuteRequest&)>;

/// Stages, runs and collects one call of `request` (its warmup and iterations are ignored). The
/// result is the Run request's (its times, outcome and the parent's observation of it alone),
/// or the first part's that failed. The CPU time the worker's other threads used during Stage
/// and Collect, when only the worker's own code runs, is counted as idle time in the
/// observation, as is the idle time before each part; the host link's seconds are summed.
/// Without `collect` the call's results stay in the worker (a timed call left unchecked); its
/// Collect request still comes, copying nothing, as the worker checks its integrity there.
ExecuteResult execute_staged_call(const RequestExecutor& execute, ExecuteRequest request,
                                  bool collect = true);
/// The same through the guard's worker.
ExecuteResult execute_staged_call(Worker& worker, ExecuteRequest request, bool collect = true);

}  // namespace kernelarc
