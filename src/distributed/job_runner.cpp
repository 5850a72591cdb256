#include "distributed/job_runner.h"

#include <fmt/format.h>

#include "app/guard_session.h"
#include "app/optimize_skills.h"
#include "distributed/bundles.h"
#include "optimize/evaluator.h"

namespace kernelarc {

namespace {

// Each context holds a guard with its sandboxed worker process; a worker serving many runs
// keeps the few most recent.
constexpr std::size_t kMaxContexts = 4;

}  // namespace

struct JobRunner::Context {
  Problem problem;
  std::unique_ptr<GuardSession> session;
  std::unique_ptr<GuardEvaluator> evaluator;
  std::string hardware;  ///< the device in words, once calibrated
};

JobRunner::JobRunner(std::string device, std::filesystem::path workspace, std::string python,
                     BlobExchange& blobs)
    : device_(std::move(device)),
      workspace_(std::move(workspace)),
      python_(std::move(python)),
      blobs_(&blobs) {}

JobRunner::~JobRunner() = default;

JobRunner::Context& JobRunner::context_of(const Job& job) {
  const std::string key = job.problem + "\n" + job.oracle + "\n" + job.guard.dump();
  auto& slot = contexts_[key];
  if (slot) return *slot;
  if (contexts_.size() > kMaxContexts) {
    std::erase_if(contexts_, [&](const auto& entry) { return entry.first != key; });
  }
  auto context = std::make_unique<Context>();
  context->problem = materialize_problem(*blobs_, job.problem, workspace_ / "remote" / "problems");
  GuardFlags flags;
  flags.workspace = workspace_.string();
  flags.device = device_;
  flags.python = python_;
  apply_guard_settings(job.guard, flags);
  context->session = std::make_unique<GuardSession>(flags);
  install_oracle_draws(*blobs_, job.oracle, oracle_cache_dir(workspace_));
  // Calibrated first (automatically in a fresh workspace), as the orchestrator's search guard
  // is: its name is what a job's hardware is compared with.
  context->session->guard().calibration();
  context->hardware = hardware_name(workspace_, device_);
  std::vector<Workload> workloads = context->session->select_workloads(context->problem);
  context->evaluator =
      std::make_unique<GuardEvaluator>(context->session->guard(), context->session->guard(),
                                       context->problem, std::move(workloads), context->hardware);
  slot = std::move(context);
  return *slot;
}

std::vector<Trace> JobRunner::run(const Job& job) {
  Context& context = context_of(job);
  if (job.hardware != context.hardware)
    throw WrongDeviceError(fmt::format("the run measures on {} and this worker's {} is {}",
                                       job.hardware, device_, context.hardware));
  const Solution solution =
      parse_solution(OrderedJson::parse(blobs_->get(job.solution)), "blob " + job.solution, {});
  return context.evaluator->evaluate(solution);
}

}  // namespace kernelarc
