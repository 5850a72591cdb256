// What travels through the queue: a build-and-measure job (by content hash, plus the search
// guard's settings) and its result. Both are one JSON field of a stream entry.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/guard_session.h"
#include "distributed/queue_keys.h"
#include "eval/trace.h"

namespace kernelarc {

struct Job {
  int protocol = kQueueProtocol;
  uint64_t ticket = 0;
  std::string reply_to;     ///< the results stream of the orchestrator that submitted it
  std::string device_kind;  ///< "cpu" or "cuda": only a worker of this kind measures it
  /// The run's device in words (its calibration's CPU model or GPU name): a worker measures
  /// only on the same hardware, so that every candidate's time is comparable.
  std::string hardware;
  std::string problem;   ///< hash of the problem bundle (distributed/bundles.h)
  std::string oracle;    ///< hash of the oracle draws' bundle
  std::string solution;  ///< hash of the solution's JSON (sources inline)
  /// The search guard's settings (trials, warmup, iterations, budget, timeout, seed, cflags,
  /// checked calls) and the selected workloads' uuids; the device is the worker's own.
  nlohmann::json guard;
  std::vector<std::string> refused_by;  ///< workers that could not take it (another kind)
};

struct JobResult {
  uint64_t ticket = 0;
  std::string solution;  ///< the job's solution hash: a result matches a ticket and a solution
  /// Who measured it, as the run reports it: "worker host-a/cuda:0/4711", or a device of the
  /// orchestrator's own host ("cuda:1").
  std::string worker;
  /// Why the worker did not measure it: another device kind, another protocol version, or an
  /// infrastructure failure (a missing blob); empty when `traces` hold the measurement.
  std::string refused;
  bool requeued = false;  ///< with `refused`: the job went back to the queue for another worker
  std::vector<Trace> traces;
};

std::string job_to_json(const Job& job);
/// InputError naming the stream entry for a malformed job.
Job job_from_json(const std::string& text, const std::string& where);
std::string result_to_json(const JobResult& result);
JobResult result_from_json(const std::string& text, const std::string& where);

/// The search guard's settings as a job carries them, and back onto a worker's flags (whose
/// device, workspace and interpreter stay the worker's).
nlohmann::json guard_settings_to_json(const GuardFlags& flags,
                                      const std::vector<Workload>& selected);
void apply_guard_settings(const nlohmann::json& settings, GuardFlags& flags);

}  // namespace kernelarc
