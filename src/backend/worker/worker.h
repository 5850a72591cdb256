// The parent's handle on an isolated worker process that loads a candidate and runs it.
//
// The worker is a fresh process (`kernelarc worker`, exec'd, so no CUDA state is inherited)
// that talks over a pipe pair with length-prefixed JSON messages and exchanges tensors through
// a shared-memory arena. The candidate never receives arena pointers: the worker copies inputs
// from the arena into its own (device) buffers at a new address every call, poisons the outputs,
// calls the entry point, and copies outputs and inputs back. The expected outputs never enter
// the worker. A crash, a hang (watchdog) or a runaway allocation (memory limit) ends only the
// worker; the next call restarts it.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/dtype.h"

namespace kernelarc {

struct WorkerOptions {
  std::string device = "cpu";  ///< "cpu" or "cuda:N"
  /// The kernelarc executable to run as `<executable> worker ...`; default: this process's.
  std::filesystem::path executable;
  /// A call (one ka_run plus its copies) that takes longer is a hang: the worker is killed.
  std::chrono::milliseconds call_timeout{10'000};
  /// Address-space limit of the worker on the CPU (RLIMIT_AS); 0 = none. Not applied for CUDA,
  /// whose driver reserves huge virtual ranges.
  std::size_t memory_limit_bytes = std::size_t{16} << 30;
  /// Where the worker's (and the candidate's) stdout/stderr go; empty = a temporary file.
  /// Emptied before a request once it passes 64 MiB; the worker cannot grow it past 256 MiB.
  std::filesystem::path log_path;
  /// Directories the candidate may neither read nor write (the workspace, with the oracle's
  /// expected outputs), enforced by Landlock where the kernel has it; need not exist yet.
  std::vector<std::filesystem::path> protected_paths;
  /// Directories beneath a protected one that the worker still reads (the build cache with the
  /// candidates' libraries); created when missing, so that they exist when the sandbox is made.
  std::vector<std::filesystem::path> readable_paths;
  /// The cores the worker (and every thread of the candidate) runs on; empty = all of this
  /// process's. Disjoint sets keep concurrent timed runs on one CPU off each other's cores.
  std::vector<int> cpus;
};

/// A contiguous tensor at an offset in the shared arena.
struct ArenaTensor {
  DType dtype = DType::Float32;
  std::vector<int64_t> shape;
  std::size_t offset = 0;
  std::string name;  ///< the definition's name, for messages
};

/// Addresses a buffer takes in turn, one call after another (ExecuteRequest::address_slot).
inline constexpr int kAddressSlots = 16;

/// One call may be split into three requests so that the parent's clock and the kernel's CPU
/// accounting see the call alone: Stage copies the inputs in, poisons the outputs and flushes
/// the cache; Run makes the one call; Collect copies the results back. Between them only the
/// worker's code runs, so what the parent measures around Run bounds the reported time tightly
/// (a flush inside the measured request let ~30 ms of real work per call hide in its margin).
/// The worker checks its fingerprints after Collect, not after a successful Run, so every such
/// Run must be followed by a Collect (with copy_back false to copy nothing). Whole does
/// everything in one request (several calls, warm-ups).
enum class RequestPhase { Whole, Stage, Run, Collect };

struct ExecuteRequest {
  std::vector<ArenaTensor> inputs;
  std::vector<ArenaTensor> outputs;
  /// One element's bytes per output, written over the whole output before every call.
  std::vector<std::vector<uint8_t>> output_poison;
  std::size_t workspace_bytes = 0;
  int warmup = 0;      ///< untimed calls first
  int iterations = 1;  ///< timed calls
  bool flush_cache = true;
  /// After the last call, copy outputs and inputs back to their arena offsets.
  bool copy_back = true;
  /// Every call of the request at this address slot [0, kAddressSlots) instead of the next one in
  /// turn: the guard puts its audits where an earlier call with other contents was, so a cache
  /// keyed on the address returns a stale result there.
  std::optional<int> address_slot;
  /// Call the worker's own entry point that returns at once instead of the candidate's: the
  /// guard measures what a request costs around the call this way, in a worker that has loaded
  /// no candidate yet, and bounds the candidate's reported times with it.
  bool null_kernel = false;
  /// Stage, Run and Collect need warmup 0 and iterations 1, and come in that order with the
  /// same tensors; the settings of Stage (flush, address slot) hold for the call.
  RequestPhase phase = RequestPhase::Whole;
};

/// What the parent measured of one execute request by its own clock and the kernel's accounting
/// of the worker's threads (/proc/<pid>/task/*/schedstat), which code in the worker cannot forge.
/// Zero when /proc could not be read (valid false).
struct ParentObservation {
  bool valid = false;
  double wall_ns = 0;      ///< from sending the request to reading the reply
  double main_cpu_ns = 0;  ///< CPU time of the worker's main thread (which makes the calls)
  /// Time the main thread was runnable but waited for a core: part of wall_ns that a loaded
  /// machine adds, not the call.
  double main_wait_ns = 0;
  /// Time the parent's own thread, woken by the reply, waited for a core before it read the
  /// clock: also part of wall_ns that a loaded machine adds.
  double parent_wait_ns = 0;
  double other_cpu_ns = 0;  ///< CPU time of its other threads alive at the reply
  int other_threads = 0;    ///< most threads besides the main one, before or after
  int tasks_after = 0;      ///< threads of the worker at the reply
  /// CPU time all its threads used between the previous reply and this request, when the worker
  /// only waits for the next request; and that interval's length.
  double idle_cpu_ns = 0;
  double idle_wall_ns = 0;
};

enum class CallOutcome {
  Ok,
  Failed,       ///< the entry point returned non-zero
  Crashed,      ///< the worker died (signal or exit) during the call
  TimedOut,     ///< the watchdog killed the worker
  OutOfMemory,  ///< an allocation failed or the memory limit was hit
  LoadFailed,   ///< dlopen/dlsym failed, or the launch plan or its cubin could not be loaded
  OutOfBounds,  ///< the call wrote into the guard bytes around one of its buffers
  Tampered,     ///< the candidate changed the worker's code or relocation tables, or shadows a
                ///< function the worker's clock depends on
};

std::string_view call_outcome_name(CallOutcome outcome);

struct ExecuteResult {
  CallOutcome outcome = CallOutcome::Ok;
  int return_code = 0;
  std::string message;           ///< ka_last_error(), the signal, the loader's error, ...
  std::vector<double> times_ns;  ///< one per timed iteration
  std::vector<std::vector<std::string>> launched;  ///< per timed iteration (CUDA)
  std::string clock;
  int threads_before = 0;  ///< threads of the worker after the first call
  int threads_after = 0;   ///< threads after the last call
  /// Last lines (up to 20) the worker/candidate printed during this request, for diagnostics;
  /// filled when the outcome is not Ok.
  std::string log_tail;
  /// The kernels the last timed call launched, one KernelResources::to_json() object each
  /// (registers, shared memory, launch shape); an empty array on the CPU or without CUPTI.
  nlohmann::json kernels = nlohmann::json::array();
  /// GpuStatus::to_json() (NVML clocks, temperature, power) read when the worker began and
  /// finished the request; null on the CPU.
  nlohmann::json device_status_before;
  nlohmann::json device_status_after;
  /// Seconds the worker spent copying the inputs from the arena to the device and the results
  /// back (its own clock; for the guard's account of where its time went, never for a verdict).
  double host_link_seconds = 0;
  /// Filled by the parent (never read from the worker's reply) for execute requests.
  ParentObservation observed;
};

/// Not thread-safe: one thread at a time per Worker (any thread; the process is forked from a
/// long-lived launcher thread, so the worker outlives the thread that started it).
class Worker {
 public:
  explicit Worker(WorkerOptions options);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  /// Loads a compiled library and resolves its entry point (and optional ka_last_error), or,
  /// when is_launch_plan(library) holds, loads the launch plan and its cubin on the CUDA device
  /// (the symbol is then ignored). Runs it in a fresh worker process when candidate code was
  /// loaded in the current one (or it died): nothing one candidate leaves behind reaches the
  /// next. Outcome Ok or LoadFailed (or Crashed/TimedOut).
  ExecuteResult load(const std::filesystem::path& library, const std::string& symbol);
  /// The shared arena, at least `bytes` long; pointers stay valid until the next call to arena().
  std::span<std::byte> arena(std::size_t bytes);
  /// Runs the loaded candidate. If the worker died, it is restarted and the library reloaded.
  ExecuteResult execute(const ExecuteRequest& request);
  /// Device kind and description as the worker sees it.
  std::string device_description();
  /// The GPU's architecture as CudaCompileOptions::device_arch takes it ("sm_90"); empty on the
  /// CPU. Starts the worker if none runs, so it throws InternalError when the device cannot be
  /// created (no CUDA device, say).
  std::string device_arch();
  /// The sandbox the last started worker runs in (SandboxStatus::to_json(): seccomp on or off
  /// and why, the Landlock ABI or why none); null before a worker has started.
  nlohmann::json sandbox_status() const;
  /// Kills the worker process (if any); the next call starts a new one.
  void stop();
  /// Whether the running worker process has loaded a candidate library (whose code may still
  /// run in it); false when none runs.
  bool candidate_loaded() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

struct SandboxOptions;

/// The body of `kernelarc worker`: enters the sandbox once the device exists, then serves
/// requests on the given fds until EOF.
int worker_main(int request_fd, int reply_fd, const std::string& device,
                const std::filesystem::path& arena_path, const SandboxOptions& sandbox);

}  // namespace kernelarc
