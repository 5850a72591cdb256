// Jobs and results as they travel through the queue: what a worker writes, the orchestrator
// reads back unchanged, down to the traces it stores.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/error.h"
#include "distributed/job.h"
#include "eval/trace_from_json.h"

namespace kernelarc {
namespace {

Trace measured_trace() {
  Trace trace;
  trace.definition = "rmsnorm_f32";
  trace.solution = "tiled";
  trace.workload = OrderedJson::parse(R"({"uuid":"9f5092c6","axes":{"batch_size":4}})");
  trace.status = EvalStatus::Passed;
  trace.correctness = CompareResult{true, 1e-7, 2e-7, 1.0, false, false, ""};
  trace.trials = 3;
  trace.trials_passed = 3;
  trace.audit_passed = true;
  trace.samples_ms = {0.5, 0.25, 0.75};
  trace.latency_ms = summarize(trace.samples_ms);
  trace.clock = "steady_clock";
  trace.eager_ms = 1.5;
  trace.baseline_note = "no torch.compile";
  trace.sol_ms = 0.125;
  trace.sol_note = "memory bound";
  trace.environment = OrderedJson::parse(R"({"cpu":"test"})");
  trace.extra = OrderedJson::parse(R"({"threads":2})");
  trace.timestamp = "2026-01-01T00:00:00Z";
  return trace;
}

TEST(TraceFromJson, ReadsBackWhatTraceToJsonWrote) {
  const OrderedJson written = trace_to_json(measured_trace());
  EXPECT_EQ(trace_to_json(trace_from_json(written, "here")).dump(), written.dump());
}

TEST(TraceFromJson, AFailedTraceWithAnInfiniteErrorKeepsItsStatusAndLog) {
  Trace trace;
  trace.status = EvalStatus::IncorrectNumerical;
  trace.log = "3 of 16 elements are inf";
  trace.correctness =
      CompareResult{false, std::numeric_limits<double>::infinity(), 1.0, 0.5, false, true, ""};
  // As it travels: as text, where JSON has no infinity.
  const Trace read = trace_from_json(OrderedJson::parse(trace_to_json(trace).dump()), "here");
  EXPECT_EQ(read.status, EvalStatus::IncorrectNumerical);
  EXPECT_EQ(read.log, trace.log);
  ASSERT_TRUE(read.correctness);
  EXPECT_TRUE(std::isnan(read.correctness->max_absolute_error));
  EXPECT_TRUE(read.correctness->has_inf);
  EXPECT_FALSE(read.latency_ms);
}

TEST(TraceFromJson, AnUnknownStatusNamesTheFieldAndWhere) {
  OrderedJson json = trace_to_json(measured_trace());
  json["evaluation"]["status"] = "FAST";
  try {
    trace_from_json(json, "results entry 1-0");
    FAIL() << "accepted";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("results entry 1-0"), std::string::npos);
    EXPECT_NE(std::string(error.what()).find("evaluation.status"), std::string::npos);
  }
}

TEST(JobJson, RoundTripsEveryField) {
  Job job;
  job.ticket = 42;
  job.reply_to = "q:results:abc";
  job.device_kind = "cuda";
  job.hardware = "NVIDIA H200";
  job.problem = "p1";
  job.oracle = "o1";
  job.solution = "s1";
  job.guard = {{"trials", 3}};
  job.refused_by = {"host-b/cpu/7"};
  const Job read = job_from_json(job_to_json(job), "entry");
  EXPECT_EQ(job_to_json(read), job_to_json(job));
}

TEST(JobJson, AMalformedJobNamesTheEntry) {
  try {
    job_from_json(R"({"protocol":1})", "q:jobs entry 5-0");
    FAIL() << "accepted";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("q:jobs entry 5-0"), std::string::npos);
  }
}

TEST(JobJson, AResultCarriesItsTraces) {
  JobResult result{7, "s1", "worker host-a/cpu/9", "", false, {measured_trace()}};
  const JobResult read = result_from_json(result_to_json(result), "entry");
  EXPECT_EQ(read.ticket, 7u);
  EXPECT_EQ(read.worker, "worker host-a/cpu/9");
  ASSERT_EQ(read.traces.size(), 1u);
  EXPECT_EQ(trace_to_json(read.traces[0]).dump(), trace_to_json(measured_trace()).dump());
}

TEST(GuardSettings, AWorkerMeasuresWithTheSearchGuardsSettingsOnItsOwnDevice) {
  GuardFlags search;
  search.trials = 3;
  search.iterations = 7;
  search.checked_timed_calls = 3;
  search.seed = 11;
  search.cflags = "-O2";
  search.device = "cuda:0";
  search.workspace = "/orchestrator";
  search.no_baseline = true;
  Workload workload;
  workload.uuid = "9f5092c6-0000";
  const nlohmann::json settings = guard_settings_to_json(search, {workload});

  GuardFlags worker;
  worker.device = "cuda:3";
  worker.workspace = "/worker";
  apply_guard_settings(settings, worker);
  EXPECT_EQ(worker.trials, 3);
  EXPECT_EQ(worker.iterations, 7);
  EXPECT_EQ(worker.checked_timed_calls, 3);
  EXPECT_EQ(worker.seed, 11u);
  EXPECT_EQ(worker.cflags, "-O2");
  EXPECT_EQ(worker.workloads, std::vector<std::string>{"9f5092c6-0000"});
  EXPECT_TRUE(worker.no_baseline);
  EXPECT_EQ(worker.device, "cuda:3");
  EXPECT_EQ(worker.workspace, "/worker");
}

}  // namespace
}  // namespace kernelarc
