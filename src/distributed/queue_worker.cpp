#include "distributed/queue_worker.h"

#include <unistd.h>

#include <ctime>
#include <iostream>
#include <optional>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "backend/backend.h"
#include "distributed/host_name.h"
#include "distributed/job_lease.h"
#include "distributed/job_runner.h"
#include "distributed/streams.h"

namespace kernelarc {

namespace {

class QueueWorker {
 public:
  explicit QueueWorker(QueueWorkerOptions options);
  [[noreturn]] void serve();

 private:
  void announce();
  std::optional<StreamEntry> take_over();
  std::optional<StreamEntry> take_new();
  void handle(const StreamEntry& entry);
  void give_back(const StreamEntry& entry, Job job, const std::string& why);
  void finish(const StreamEntry& entry, const Job& job, const JobResult& result);

  QueueWorkerOptions options_;
  QueueKeys keys_;
  std::string kind_;
  std::string name_;
  RedisClient redis_;
  ObjectStore objects_;
  BlobExchange blobs_;
  JobRunner runner_;
};

QueueWorker::QueueWorker(QueueWorkerOptions options)
    : options_(std::move(options)),
      keys_{options_.queue},
      kind_(device_kind_name(backend_for(options_.device).kind())),
      name_(fmt::format("{}/{}/{}", host_name(), options_.device, getpid())),
      // Commands must outlast the blocking read.
      redis_(options_.url, options_.poll + std::chrono::seconds(30)),
      objects_(options_.workspace / "objects"),
      blobs_(redis_, keys_, objects_),
      runner_(options_.device, options_.workspace, options_.python, blobs_) {
  if (!options_.log) options_.log = [](const std::string& line) { std::cerr << line << '\n'; };
}

// The registry says who could take what, for a user wondering why a queue does not move.
void QueueWorker::announce() {
  const nlohmann::json entry = {
      {"device", options_.device}, {"kind", kind_}, {"seen", std::time(nullptr)}};
  redis_.command({"HSET", keys_.workers(), name_, entry.dump()});
  redis_.command({"EXPIRE", keys_.workers(), std::to_string(kQueueExpirySeconds)});
}

void QueueWorker::serve() {
  ensure_worker_group(redis_, keys_);
  options_.log(fmt::format("worker {}: taking {} jobs from {} at {}", name_, kind_, keys_.jobs(),
                           options_.url));
  while (true) {
    announce();
    auto entry = take_over();
    if (!entry) entry = take_new();
    if (entry) handle(*entry);
  }
}

std::optional<StreamEntry> QueueWorker::take_over() {
  std::string cursor = "0-0";
  do {
    const RedisReply reply =
        redis_.command({"XAUTOCLAIM", keys_.jobs(), kWorkerGroup, name_,
                        std::to_string(options_.reclaim_after.count()), cursor, "COUNT", "1"});
    if (reply.elements.size() < 2) return std::nullopt;
    cursor = reply.elements[0].text;
    auto entries = stream_entries(reply.elements[1]);
    if (!entries.empty()) {
      options_.log(fmt::format("worker {}: took over job {}, silent for over {} s", name_,
                               entries.front().id, options_.reclaim_after.count() / 1000.0));
      return std::move(entries.front());
    }
  } while (cursor != "0-0");
  return std::nullopt;
}

std::optional<StreamEntry> QueueWorker::take_new() {
  auto entries = read_entries(
      redis_.command({"XREADGROUP", "GROUP", kWorkerGroup, name_, "COUNT", "1", "BLOCK",
                      std::to_string(options_.poll.count()), "STREAMS", keys_.jobs(), ">"}));
  if (entries.empty()) return std::nullopt;
  return std::move(entries.front());
}

void QueueWorker::handle(const StreamEntry& entry) {
  const auto field = entry.fields.find("job");
  Job job;
  try {
    if (field == entry.fields.end()) throw InputError("no \"job\" field");
    job = job_from_json(field->second, keys_.jobs() + " entry " + entry.id);
  } catch (const InputError& error) {
    options_.log(
        fmt::format("worker {}: dropped malformed job {}: {}", name_, entry.id, error.what()));
    redis_.command({"XACK", keys_.jobs(), kWorkerGroup, entry.id});
    return;
  }
  if (job.protocol != kQueueProtocol)
    return give_back(entry, std::move(job),
                     fmt::format("the job has queue protocol {}, this worker {} (run the same "
                                 "kernelarc version on every host)",
                                 job.protocol, kQueueProtocol));
  if (job.device_kind != kind_)
    return give_back(entry, std::move(job),
                     fmt::format("the run targets {} and this worker measures on {}",
                                 job.device_kind, options_.device));
  options_.log(fmt::format("worker {}: measuring ticket {} (job {})", name_, job.ticket, entry.id));
  JobResult result{job.ticket, job.solution, "worker " + name_, "", false, {}};
  std::string wrong_device;
  {
    JobLease lease(options_.url, keys_, name_, entry.id, options_.reclaim_after, options_.log);
    try {
      result.traces = runner_.run(job);
    } catch (const WrongDeviceError& error) {
      wrong_device = error.what();
    } catch (const std::exception& error) {
      result.refused = error.what();
    }
  }
  if (!wrong_device.empty()) return give_back(entry, std::move(job), wrong_device);
  finish(entry, job, result);
}

// Acknowledged and added again at the end of the stream, so that another worker reads it; this
// one then waits a poll before reading, not to take the same job straight back.
void QueueWorker::give_back(const StreamEntry& entry, Job job, const std::string& why) {
  options_.log(fmt::format("worker {}: cannot take ticket {}: {}", name_, job.ticket, why));
  job.refused_by.push_back(name_);
  const JobResult notice{job.ticket, job.solution, "worker " + name_, why, true, {}};
  redis_.command({"MULTI"});
  redis_.command({"XADD", keys_.jobs(), "*", "job", job_to_json(job)});
  redis_.command({"XACK", keys_.jobs(), kWorkerGroup, entry.id});
  redis_.command({"XDEL", keys_.jobs(), entry.id});
  add_result(redis_, job.reply_to, notice);
  redis_.command({"EXEC"});
  std::this_thread::sleep_for(options_.poll);
}

// The result and the acknowledgement in one transaction: killed before it, the job is taken
// over and measured again; after it, the job is done. Never acknowledged without a result.
void QueueWorker::finish(const StreamEntry& entry, const Job& job, const JobResult& result) {
  redis_.command({"MULTI"});
  add_result(redis_, job.reply_to, result);
  redis_.command({"XACK", keys_.jobs(), kWorkerGroup, entry.id});
  redis_.command({"XDEL", keys_.jobs(), entry.id});
  redis_.command({"EXEC"});
  options_.log(fmt::format("worker {}: ticket {} (job {}) {}", name_, job.ticket, entry.id,
                           result.refused.empty() ? "measured" : "failed: " + result.refused));
}

}  // namespace

void run_queue_worker(QueueWorkerOptions options) {
  QueueWorker(std::move(options)).serve();
}

}  // namespace kernelarc
