#include "backend/worker/worker_protocol.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>

#include "backend/cuda/cuda_device.h"
#include "backend/worker/worker_death.h"
#include "backend_test_util.h"

namespace kernelarc {
namespace {

class SocketPair {
 public:
  SocketPair() { EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds_), 0); }
  ~SocketPair() {
    close_end(0);
    close_end(1);
  }
  int end(int i) const { return fds_[i]; }
  void close_end(int i) {
    if (fds_[i] >= 0) close(fds_[i]);
    fds_[i] = -1;
  }

 private:
  int fds_[2] = {-1, -1};
};

auto soon() {
  return std::chrono::steady_clock::now() + std::chrono::milliseconds(50);
}

TEST(WorkerProtocol, FramesRoundTrip) {
  SocketPair pair;
  Json sent = {{"type", "result"}, {"id", 3}, {"text", std::string(100'000, 'x')}};
  std::thread writer([&] { EXPECT_TRUE(write_message(pair.end(0), sent)); });
  Json received;
  std::string error;
  EXPECT_EQ(read_message(pair.end(1), std::nullopt, received, error), ReadStatus::Ok);
  writer.join();
  EXPECT_EQ(received, sent);
}

TEST(WorkerProtocol, ReadReportsEofTimeoutAndGarbage) {
  Json message;
  std::string error;
  {
    SocketPair pair;
    EXPECT_EQ(read_message(pair.end(1), soon(), message, error), ReadStatus::TimedOut);
    pair.close_end(0);
    EXPECT_EQ(read_message(pair.end(1), soon(), message, error), ReadStatus::Eof);
  }
  {
    SocketPair pair;
    const unsigned char huge[4] = {0xff, 0xff, 0xff, 0x7f};
    ASSERT_EQ(write(pair.end(0), huge, 4), 4);
    EXPECT_EQ(read_message(pair.end(1), soon(), message, error), ReadStatus::Malformed);
    EXPECT_NE(error.find("bytes"), std::string::npos);
  }
  {
    SocketPair pair;
    const char not_json[] = {3, 0, 0, 0, 'a', 'b', 'c'};
    ASSERT_EQ(write(pair.end(0), not_json, sizeof not_json), static_cast<ssize_t>(sizeof not_json));
    EXPECT_EQ(read_message(pair.end(1), soon(), message, error), ReadStatus::Malformed);
  }
}

TEST(WorkerProtocol, WritingToAClosedPeerFailsWithoutSigpipe) {
  SocketPair pair;
  pair.close_end(1);
  EXPECT_FALSE(write_message(pair.end(0), {{"type", "describe"}}));
}

TEST(WorkerProtocol, RequestAndResultRoundTrip) {
  ExecuteRequest request;
  request.inputs = {{DType::BFloat16, {2, 3}, 128}};
  request.outputs = {{DType::Int64, {}, 0}};
  request.output_poison = {{1, 2, 3, 4, 5, 6, 7, 8}};
  request.workspace_bytes = 4096;
  request.warmup = 2;
  request.iterations = 9;
  request.flush_cache = false;
  ExecuteRequest back = request_from_json(request_to_json(request));
  EXPECT_EQ(back.inputs[0].dtype, DType::BFloat16);
  EXPECT_EQ(back.inputs[0].shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(back.inputs[0].offset, 128u);
  EXPECT_EQ(back.outputs[0].shape.size(), 0u);
  EXPECT_EQ(back.output_poison, request.output_poison);
  EXPECT_EQ(back.workspace_bytes, 4096u);
  EXPECT_EQ(back.warmup, 2);
  EXPECT_EQ(back.iterations, 9);
  EXPECT_FALSE(back.flush_cache);
  EXPECT_TRUE(back.copy_back);
  EXPECT_EQ(back.phase, RequestPhase::Whole);
  request.warmup = 0;
  request.iterations = 1;
  for (RequestPhase phase : {RequestPhase::Stage, RequestPhase::Run, RequestPhase::Collect}) {
    request.phase = phase;
    EXPECT_EQ(request_from_json(request_to_json(request)).phase, phase);
  }

  ExecuteResult result;
  result.outcome = CallOutcome::Failed;
  result.return_code = -3;
  result.message = "bad";
  result.times_ns = {1.5, 2.5};
  result.launched = {{"k|1|2|3"}, {}};
  result.clock = "steady_clock";
  result.threads_before = 4;
  result.threads_after = 5;
  ExecuteResult same = result_from_json(result_to_json(result));
  EXPECT_EQ(same.outcome, CallOutcome::Failed);
  EXPECT_EQ(same.return_code, -3);
  EXPECT_EQ(same.message, "bad");
  EXPECT_EQ(same.times_ns, result.times_ns);
  EXPECT_EQ(same.launched, result.launched);
  EXPECT_EQ(same.threads_after, 5);
  EXPECT_THROW(result_from_json({{"outcome", "sideways"}}), std::exception);
}

TEST(WorkerProtocol, EveryElementTypeCrossesAndOthersAreRefused) {
  for (int value = KA_FLOAT64; value <= KA_FLOAT4_E2M1FN_X2; ++value) {
    ExecuteRequest request;
    request.inputs = {{static_cast<DType>(value), {4, 8}, 0}};
    EXPECT_EQ(request_from_json(request_to_json(request)).inputs[0].dtype,
              static_cast<DType>(value));
  }
  ExecuteRequest request;
  request.inputs = {{DType::Float32, {1}, 0}};
  Json json = request_to_json(request);
  json["inputs"][0]["dtype"] = KA_FLOAT4_E2M1FN_X2 + 1;
  EXPECT_THROW(request_from_json(json), std::exception);
}

TEST(WorkerProtocol, KernelsAndDeviceStatusRoundTrip) {
  ExecuteResult cpu = result_from_json(result_to_json(ExecuteResult{}));
  EXPECT_EQ(cpu.kernels, Json::array());
  EXPECT_TRUE(cpu.device_status_before.is_null());
  EXPECT_TRUE(cpu.device_status_after.is_null());

  ExecuteResult result;
  KernelResources kernel;
  kernel.name = "add_one";
  kernel.grid = {4, 1, 1};
  kernel.block = {256, 1, 1};
  kernel.registers_per_thread = 16;
  kernel.launches = 1;
  result.kernels.push_back(kernel.to_json());
  GpuStatus status;
  status.available = true;
  status.name = "NVIDIA H200";
  status.sm_clock_mhz = 1980;
  status.memory_clock_mhz = 3201;
  result.device_status_before = status.to_json();
  status.temperature_c = 41;
  result.device_status_after = status.to_json();
  ExecuteResult same = result_from_json(result_to_json(result));
  ASSERT_EQ(same.kernels.size(), 1u);
  EXPECT_EQ(same.kernels[0]["name"], "add_one");
  EXPECT_EQ(same.kernels[0]["registers_per_thread"], 16);
  EXPECT_EQ(same.kernels[0]["grid"], Json({4, 1, 1}));
  EXPECT_EQ(same.device_status_before["sm_clock_mhz"], 1980);
  EXPECT_EQ(same.device_status_after["temperature_c"], 41);
  EXPECT_EQ(same.device_status_after, result.device_status_after);

  Json not_an_array = result_to_json(result);
  not_an_array["kernels"] = Json::object();
  EXPECT_THROW(result_from_json(not_an_array), std::exception);
  Json missing = result_to_json(result);
  missing.erase("device_status_after");
  EXPECT_THROW(result_from_json(missing), std::exception);
}

TEST(WorkerProtocol, OutcomeNamesRoundTrip) {
  for (CallOutcome outcome :
       {CallOutcome::Ok, CallOutcome::Failed, CallOutcome::Crashed, CallOutcome::TimedOut,
        CallOutcome::OutOfMemory, CallOutcome::LoadFailed})
    EXPECT_EQ(call_outcome_from_name(call_outcome_name(outcome)), outcome);
  EXPECT_EQ(call_outcome_name(CallOutcome::OutOfMemory), "out_of_memory");
}

TEST(WorkerProtocol, RequestProblemsAreNamed) {
  ExecuteRequest request;
  request.inputs = {{DType::Float32, {4}, 0}};
  request.outputs = {{DType::Float32, {4}, 16}};
  request.output_poison = {{0}};
  EXPECT_EQ(request_problem(request, 32), "");
  EXPECT_NE(request_problem(request, 31).find("output 0"), std::string::npos);
  request.output_poison.clear();
  EXPECT_NE(request_problem(request, 32).find("output_poison"), std::string::npos);
  request.output_poison = {{0}};
  request.inputs[0].shape = std::vector<int64_t>(9, 1);
  EXPECT_NE(request_problem(request, 32).find("more than 8"), std::string::npos);
  request.inputs[0].shape = {4};
  request.phase = RequestPhase::Run;
  request.iterations = 3;
  EXPECT_NE(request_problem(request, 32).find("staged call"), std::string::npos);
}

TEST(WorkerDeath, ClassifiesSignalsExitsAndTimeouts) {
  WorkerOptions options;
  options.memory_limit_bytes = std::size_t{1} << 30;
  auto classify = [&](ExitStatus status, DeathCause cause = DeathCause::Exited) {
    return classify_death(status, cause, "during a call", std::chrono::milliseconds(2000), options);
  };
  ExecuteResult segv = classify({.signaled = true, .signal = SIGSEGV});
  EXPECT_EQ(segv.outcome, CallOutcome::Crashed);
  EXPECT_EQ(segv.message, "killed by signal SIGSEGV (Segmentation fault) during a call");
  EXPECT_EQ(classify({.signaled = true, .signal = SIGKILL}).outcome, CallOutcome::OutOfMemory);
  EXPECT_EQ(classify({.signaled = true, .signal = SIGSEGV, .max_rss_kib = 900 << 10}).outcome,
            CallOutcome::OutOfMemory);
  ExecuteResult exited = classify({.exit_code = 0});
  EXPECT_EQ(exited.outcome, CallOutcome::Crashed);
  EXPECT_EQ(exited.message, "exited with status 0 during a call");
  EXPECT_EQ(classify({.signaled = true, .signal = SIGKILL}, DeathCause::TimedOut).outcome,
            CallOutcome::TimedOut);
}

TEST(WorkerDeath, LogTailKeepsTheLastLinesSinceTheRequest) {
  test::TempDir dir;
  std::filesystem::path log = dir.path() / "worker.log";
  {
    std::ofstream file(log);
    file << "before the request\n";
  }
  off_t start = static_cast<off_t>(std::filesystem::file_size(log));
  {
    std::ofstream file(log, std::ios::app);
    for (int i = 0; i < 30; ++i) file << "line " << i << "\n";
  }
  std::string tail = read_log_tail(log, start);
  EXPECT_EQ(tail.find("before"), std::string::npos);
  EXPECT_EQ(tail.find("line 9\n"), std::string::npos);
  EXPECT_EQ(tail.rfind("line 10\n", 0), 0u) << tail;
  EXPECT_EQ(tail.substr(tail.size() - 7), "line 29");
  EXPECT_TRUE(log_reports_allocation_failure("terminate called after throwing 'std::bad_alloc'"));
  EXPECT_FALSE(log_reports_allocation_failure("all good"));
}

}  // namespace
}  // namespace kernelarc
