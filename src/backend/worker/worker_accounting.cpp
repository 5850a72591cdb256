#include "backend/worker/worker_accounting.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

namespace kernelarc {

TaskTimes read_task_times(pid_t pid) {
  TaskTimes times;
  const std::filesystem::path tasks = "/proc/" + std::to_string(pid) + "/task";
  std::error_code error;
  for (std::filesystem::directory_iterator it(tasks, error), end; !error && it != end;
       it.increment(error)) {
    const std::string name = it->path().filename().string();
    std::ifstream stat(it->path() / "schedstat");
    double ns = 0, waited = 0;
    // The fields are the time spent on a CPU and the time spent waiting for one; a thread that
    // ended since the listing is skipped.
    if (!(stat >> ns >> waited)) continue;
    const auto tid = static_cast<pid_t>(std::strtol(name.c_str(), nullptr, 10));
    times.cpu_ns[tid] = ns;
    times.wait_ns[tid] = waited;
  }
  times.valid = !error && !times.cpu_ns.empty();
  return times;
}

namespace {

/// Whether any thread of `pid` is running or waiting for a core ('R' in its stat line, whose
/// state follows the last ')': the command name before it may hold spaces and parentheses).
bool any_thread_runnable(pid_t pid) {
  const std::filesystem::path tasks = "/proc/" + std::to_string(pid) + "/task";
  std::error_code error;
  for (std::filesystem::directory_iterator it(tasks, error), end; !error && it != end;
       it.increment(error)) {
    std::ifstream stat(it->path() / "stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    const std::size_t name_end = line.rfind(')');
    if (name_end != std::string::npos && name_end + 2 < line.size() && line[name_end + 2] == 'R')
      return true;
  }
  return false;
}

double delta(const TaskTimes& before, pid_t tid, double now) {
  const auto it = before.cpu_ns.find(tid);
  return it == before.cpu_ns.end() ? now : std::max(0.0, now - it->second);
}

}  // namespace

TaskTimes read_task_times_at_rest(pid_t pid, std::chrono::microseconds patience) {
  const auto give_up = std::chrono::steady_clock::now() + patience;
  while (any_thread_runnable(pid) && std::chrono::steady_clock::now() < give_up)
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  return read_task_times(pid);
}

double cpu_used(const TaskTimes& before, const TaskTimes& after) {
  double total = 0;
  for (const auto& [tid, ns] : after.cpu_ns) total += delta(before, tid, ns);
  return total;
}

double cpu_used_by(const TaskTimes& before, const TaskTimes& after, pid_t tid) {
  const auto it = after.cpu_ns.find(tid);
  return it == after.cpu_ns.end() ? 0.0 : delta(before, tid, it->second);
}

double cpu_used_except(const TaskTimes& before, const TaskTimes& after, pid_t tid) {
  return cpu_used(before, after) - cpu_used_by(before, after, tid);
}

double run_queue_wait_of(const TaskTimes& before, const TaskTimes& after, pid_t tid) {
  const auto it = after.wait_ns.find(tid);
  if (it == after.wait_ns.end()) return 0.0;
  const auto was = before.wait_ns.find(tid);
  return was == before.wait_ns.end() ? it->second : std::max(0.0, it->second - was->second);
}

double this_thread_run_queue_wait() {
  std::ifstream stat("/proc/thread-self/schedstat");
  double ns = 0, waited = 0;
  return stat >> ns >> waited ? waited : 0.0;
}

}  // namespace kernelarc
