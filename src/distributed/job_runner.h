// A worker's side of a job: the problem, its draws and the candidate fetched by hash, then the
// search guard on this host's device, exactly as the orchestrator's host would run it (guard,
// oracle cache, calibration and build cache in the worker's own workspace).
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "distributed/blob_exchange.h"
#include "distributed/job.h"

namespace kernelarc {

class GuardEvaluator;

/// The job's run measures on other hardware than this worker's device: the job is for another
/// worker.
class WrongDeviceError : public InputError {
 public:
  using InputError::InputError;
};

class JobRunner {
 public:
  JobRunner(std::string device, std::filesystem::path workspace, std::string python,
            BlobExchange& blobs);
  ~JobRunner();

  /// One trace per workload of the job; a failing candidate gives failing traces. Throws
  /// WrongDeviceError when the job's hardware is not this device's, and other errors for what
  /// is not the candidate's fault either (a blob the server lacks, an unreadable problem).
  std::vector<Trace> run(const Job& job);

 private:
  struct Context;
  Context& context_of(const Job& job);

  std::string device_;
  std::filesystem::path workspace_;
  std::string python_;
  BlobExchange* blobs_;
  /// By problem, draws and settings: a second job of the same run reuses the guard and its
  /// sandboxed worker process.
  std::map<std::string, std::unique_ptr<Context>> contexts_;
};

}  // namespace kernelarc
