// The parent's own account of a worker process: CPU time and run-queue wait per thread, read
// from the kernel's scheduler statistics (/proc/<pid>/task/<tid>/schedstat, nanoseconds). Code
// inside the worker cannot change these numbers, so the guard bounds the times the worker
// reports with them.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>

namespace kernelarc {

/// CPU nanoseconds, and nanoseconds spent runnable but waiting for a core, per thread id of one
/// process at one moment.
struct TaskTimes {
  bool valid = false;  ///< false when /proc/<pid>/task could not be read
  std::map<pid_t, double> cpu_ns;
  std::map<pid_t, double> wait_ns;

  int tasks() const { return static_cast<int>(cpu_ns.size()); }
};

/// The CPU time of every thread of `pid` now. A thread that is on a CPU at this moment shows
/// only the time it had at its last scheduler tick (up to 4 ms less at 250 Hz): the kernel
/// brings a running thread's count up to date only at ticks and switches.
TaskTimes read_task_times(pid_t pid);

/// The CPU time of every thread of `pid` once none of them is running or runnable, waiting at
/// most `patience` for that: read just after a worker's reply, the time its calling thread spent
/// in the call since its last tick would otherwise land in the interval after the call. A thread
/// still running when the patience ends is read as it stands.
TaskTimes read_task_times_at_rest(pid_t pid, std::chrono::microseconds patience);

/// CPU time the threads used from `before` to `after`: a thread that started in between counts
/// from zero, one that ended in between is lost (its time cannot be read any more), so the
/// result never overstates. cpu_used_by / cpu_used_except count one thread / all but one.
double cpu_used(const TaskTimes& before, const TaskTimes& after);
double cpu_used_by(const TaskTimes& before, const TaskTimes& after, pid_t tid);
double cpu_used_except(const TaskTimes& before, const TaskTimes& after, pid_t tid);
/// Time thread `tid` spent waiting for a core from `before` to `after`: on a loaded machine a
/// request's wall time grows by it, while the call itself did nothing slower.
double run_queue_wait_of(const TaskTimes& before, const TaskTimes& after, pid_t tid);
/// Time the calling thread has spent waiting for a core since it started (0 when
/// /proc/thread-self/schedstat cannot be read): the parent's own share of a request's wall time
/// on a loaded machine, from the worker's reply until the parent runs again to read it.
double this_thread_run_queue_wait();

}  // namespace kernelarc
