// The worker on the CPU: correct results through the arena, fresh addresses, poisoning,
// failures reported as data, and a worker that dies or hangs replaced on the next call.
#include "backend/worker/worker.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <cstring>
#include <set>
#include <thread>

#include "backend/cuda/cuda_device.h"
#include "backend_test_util.h"
#include "core/error.h"

namespace kernelarc {
namespace {

/// Lays tensors out in the arena, 64-byte aligned.
struct ArenaLayout {
  std::size_t end = 0;

  ArenaTensor add(DType dtype, std::vector<int64_t> shape) {
    ArenaTensor tensor{dtype, std::move(shape), end};
    std::size_t bytes = dtype_size(dtype);
    for (int64_t dim : tensor.shape) bytes *= static_cast<std::size_t>(dim);
    end += (bytes + 63) / 64 * 64;
    return tensor;
  }
};

/// The state letter of a process from /proc/<pid>/stat ('Z' for a zombie).
char process_state(pid_t pid) {
  std::string stat = test::read_text("/proc/" + std::to_string(pid) + "/stat");
  std::size_t close = stat.rfind(')');
  return close == std::string::npos || close + 2 >= stat.size() ? '?' : stat[close + 2];
}

/// The one child process of this test (its worker), or -1.
pid_t worker_child() {
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string stat = test::read_text(entry.path() / "stat");
    std::size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    if (std::atoi(stat.c_str() + close + 4) == getpid()) return std::stoi(name);
  }
  return -1;
}

constexpr int64_t kCount = 1000;
const std::vector<uint8_t> kPoison = {0xAB, 0xCD, 0xEF, 0x7F};

class WorkerTest : public ::testing::Test {
 protected:
  static WorkerOptions options() {
    WorkerOptions options;
    options.executable = KERNELARC_BINARY;
    options.call_timeout = std::chrono::seconds(5);
    options.memory_limit_bytes = std::size_t{4} << 30;
    return options;
  }

  static ExecuteResult load(Worker& worker, const std::string& symbol) {
    return worker.load(test::candidates_library(), symbol);
  }

  static float* floats(Worker& worker, const ArenaTensor& tensor) {
    return reinterpret_cast<float*>(worker.arena(0).data() + tensor.offset);
  }

  /// A vector_add request over a fresh layout: a = i, b = 2i, out poisoned.
  ExecuteRequest vector_add_request(Worker& worker, float first_a = 0) {
    ArenaLayout layout;
    ExecuteRequest request;
    request.inputs = {layout.add(DType::Float32, {kCount}), layout.add(DType::Float32, {kCount})};
    request.outputs = {layout.add(DType::Float32, {kCount})};
    request.output_poison = {kPoison};
    request.flush_cache = false;
    worker.arena(layout.end);
    for (int64_t i = 0; i < kCount; ++i) {
      floats(worker, request.inputs[0])[i] = static_cast<float>(i);
      floats(worker, request.inputs[1])[i] = static_cast<float>(2 * i);
    }
    floats(worker, request.inputs[0])[0] = first_a;
    return request;
  }

  void expect_sums(Worker& worker, const ExecuteRequest& request) {
    const float* out = floats(worker, request.outputs[0]);
    for (int64_t i = 1; i < kCount; ++i) ASSERT_EQ(out[i], 3.0f * static_cast<float>(i)) << i;
  }
};

TEST_F(WorkerTest, VectorAddWritesItsOutputIntoTheArena) {
  Worker worker(options());
  ASSERT_EQ(load(worker, "vector_add").outcome, CallOutcome::Ok);
  ExecuteRequest request = vector_add_request(worker);
  request.warmup = 1;
  request.iterations = 3;
  request.flush_cache = true;
  ExecuteResult result = worker.execute(request);
  ASSERT_EQ(result.outcome, CallOutcome::Ok) << result.message;
  EXPECT_EQ(result.times_ns.size(), 3u);
  EXPECT_EQ(result.launched.size(), 3u);
  EXPECT_EQ(result.clock, "steady_clock");
  EXPECT_GE(result.threads_before, 1);
  EXPECT_EQ(result.threads_after, result.threads_before);
  expect_sums(worker, request);
  EXPECT_EQ(floats(worker, request.inputs[0])[5], 5.0f);  // inputs copied back unchanged
  EXPECT_EQ(result.kernels, nlohmann::json::array());
  EXPECT_TRUE(result.device_status_before.is_null());
  EXPECT_TRUE(result.device_status_after.is_null());
}

TEST_F(WorkerTest, InputsMoveToANewAddressEveryCall) {
  Worker worker(options());
  ASSERT_EQ(load(worker, "record_addresses").outcome, CallOutcome::Ok);
  ArenaLayout layout;
  ExecuteRequest request;
  request.inputs = {layout.add(DType::Float32, {16})};
  request.outputs = {layout.add(DType::Int64, {16})};
  request.output_poison = {std::vector<uint8_t>(8, 0xFF)};
  request.flush_cache = false;
  request.iterations = 4;
  worker.arena(layout.end);
  ASSERT_EQ(worker.execute(request).outcome, CallOutcome::Ok);
  request.iterations = 1;
  ASSERT_EQ(worker.execute(request).outcome, CallOutcome::Ok);

  const auto* seen =
      reinterpret_cast<const int64_t*>(worker.arena(0).data() + request.outputs[0].offset);
  std::set<int64_t> distinct(seen, seen + 5);
  EXPECT_EQ(distinct.size(), 5u);
  EXPECT_EQ(seen[5], 0);
}

TEST_F(WorkerTest, UnwrittenOutputKeepsThePoison) {
  Worker worker(options());
  ASSERT_EQ(load(worker, "write_nothing").outcome, CallOutcome::Ok);
  ExecuteRequest request = vector_add_request(worker);
  std::memset(floats(worker, request.outputs[0]), 0, kCount * sizeof(float));
  ASSERT_EQ(worker.execute(request).outcome, CallOutcome::Ok);
  const auto* out = reinterpret_cast<const uint8_t*>(floats(worker, request.outputs[0]));
  for (int64_t i = 0; i < kCount * 4; ++i) ASSERT_EQ(out[i], kPoison[i % 4]) << i;
}

TEST_F(WorkerTest, NonZeroReturnIsFailedWithTheMessage) {
  Worker worker(options());
  ASSERT_EQ(load(worker, "fail_with_message").outcome, CallOutcome::Ok);
  ExecuteResult result = worker.execute(vector_add_request(worker));
  EXPECT_EQ(result.outcome, CallOutcome::Failed);
  EXPECT_EQ(result.return_code, 7);
  EXPECT_EQ(result.message, "shape 42 is not supported");
  EXPECT_NE(result.log_tail.find("about to fail"), std::string::npos) << result.log_tail;
}

TEST_F(WorkerTest, SegfaultIsCrashedAndTheNextCallRestartsTheWorker) {
  Worker worker(options());
  ASSERT_EQ(load(worker, "crash_if_flagged").outcome, CallOutcome::Ok);
  ExecuteResult crashed = worker.execute(vector_add_request(worker, 1.0f));
  EXPECT_EQ(crashed.outcome, CallOutcome::Crashed);
  EXPECT_NE(crashed.message.find("killed by signal SIGSEGV (Segmentation fault)"),
            std::string::npos)
      << crashed.message;

  // No new load(): the restarted worker reloads the library by itself.
  ExecuteRequest request = vector_add_request(worker, 0.0f);
  ExecuteResult result = worker.execute(request);
  ASSERT_EQ(result.outcome, CallOutcome::Ok) << result.message;
  expect_sums(worker, request);
}

TEST_F(WorkerTest, InfiniteLoopTimesOut) {
  WorkerOptions short_timeout = options();
  short_timeout.call_timeout = std::chrono::seconds(1);
  Worker worker(short_timeout);
  ASSERT_EQ(load(worker, "spin_forever").outcome, CallOutcome::Ok);
  ExecuteResult result = worker.execute(vector_add_request(worker));
  EXPECT_EQ(result.outcome, CallOutcome::TimedOut);
  EXPECT_NE(result.message.find("no reply within"), std::string::npos) << result.message;

  ASSERT_EQ(load(worker, "vector_add").outcome, CallOutcome::Ok);
  EXPECT_EQ(worker.execute(vector_add_request(worker)).outcome, CallOutcome::Ok);
}

TEST_F(WorkerTest, RunawayMallocHitsTheMemoryLimit) {
  WorkerOptions limited = options();
  limited.memory_limit_bytes = std::size_t{1} << 30;
  Worker worker(limited);
  ASSERT_EQ(load(worker, "allocate_forever").outcome, CallOutcome::Ok);
  ExecuteResult result = worker.execute(vector_add_request(worker));
  EXPECT_EQ(result.outcome, CallOutcome::OutOfMemory) << result.message;
  EXPECT_NE(result.message.find("memory limit"), std::string::npos) << result.message;
}

TEST_F(WorkerTest, BadAllocIsOutOfMemory) {
  WorkerOptions limited = options();
  limited.memory_limit_bytes = std::size_t{1} << 30;
  Worker worker(limited);
  ASSERT_EQ(load(worker, "throw_bad_alloc").outcome, CallOutcome::Ok);
  ExecuteResult result = worker.execute(vector_add_request(worker));
  EXPECT_EQ(result.outcome, CallOutcome::OutOfMemory);
  EXPECT_NE(result.message.find("bad_alloc"), std::string::npos) << result.message;
}

TEST_F(WorkerTest, ExitDuringACallIsCrashed) {
  Worker worker(options());
  ASSERT_EQ(load(worker, "exit_mid_call").outcome, CallOutcome::Ok);
  ExecuteResult result = worker.execute(vector_add_request(worker));
  EXPECT_EQ(result.outcome, CallOutcome::Crashed);
  EXPECT_EQ(result.message, "exited with status 0 during a call");
}

TEST_F(WorkerTest, ForgedReplyIsCaught) {
  Worker worker(options());
  ASSERT_EQ(load(worker, "forge_reply").outcome, CallOutcome::Ok);
  ExecuteResult result = worker.execute(vector_add_request(worker));
  EXPECT_EQ(result.outcome, CallOutcome::Crashed);
  EXPECT_NE(result.message.find("protocol pipe"), std::string::npos) << result.message;
}

TEST_F(WorkerTest, ThreadsStartedByTheCandidateAreCounted) {
  Worker worker(options());
  ASSERT_EQ(load(worker, "spawn_thread").outcome, CallOutcome::Ok);
  ExecuteRequest request = vector_add_request(worker);
  request.iterations = 3;
  ExecuteResult result = worker.execute(request);
  ASSERT_EQ(result.outcome, CallOutcome::Ok);
  EXPECT_EQ(result.threads_after, result.threads_before + 1);
}

TEST_F(WorkerTest, EachLoadRunsInAProcessNoOtherCandidateRanIn) {
  Worker worker(options());
  ASSERT_EQ(load(worker, "spawn_thread").outcome, CallOutcome::Ok);
  ExecuteRequest request = vector_add_request(worker);
  request.iterations = 3;
  const ExecuteResult first = worker.execute(request);
  ASSERT_EQ(first.outcome, CallOutcome::Ok);
  ASSERT_EQ(first.threads_after, first.threads_before + 1);
  const pid_t first_process = worker_child();
  ASSERT_GT(first_process, 0);

  ASSERT_EQ(load(worker, "vector_add").outcome, CallOutcome::Ok);
  const ExecuteRequest second_request = vector_add_request(worker);
  const ExecuteResult second = worker.execute(second_request);
  ASSERT_EQ(second.outcome, CallOutcome::Ok);
  expect_sums(worker, second_request);
  EXPECT_NE(worker_child(), first_process);
  // The thread the first candidate left behind is not in the second one's process.
  EXPECT_EQ(second.threads_before, first.threads_before);
}

TEST_F(WorkerTest, LoadFailuresAreReported) {
  Worker worker(options());
  ExecuteResult missing_file = worker.load("/nonexistent/lib.so", "ka_run");
  EXPECT_EQ(missing_file.outcome, CallOutcome::LoadFailed);
  EXPECT_NE(missing_file.message.find("/nonexistent/lib.so"), std::string::npos);
  ExecuteResult missing_symbol = load(worker, "no_such_entry_point");
  EXPECT_EQ(missing_symbol.outcome, CallOutcome::LoadFailed);
  EXPECT_NE(missing_symbol.message.find("no_such_entry_point"), std::string::npos);
  EXPECT_THROW(worker.execute(vector_add_request(worker)), InternalError);
}

TEST_F(WorkerTest, LaunchPlanOnTheCpuIsALoadFailure) {
  Worker worker(options());
  ExecuteResult result = worker.load("/nonexistent/kernel.launch.json", "ignored");
  EXPECT_EQ(result.outcome, CallOutcome::LoadFailed);
  EXPECT_NE(result.message.find("only on a CUDA device"), std::string::npos) << result.message;
  // The worker survives it and still loads a library.
  EXPECT_EQ(load(worker, "vector_add").outcome, CallOutcome::Ok);
}

TEST_F(WorkerTest, CudaWorkerWithoutAGpuIsAnInternalError) {
  if (cuda_device_count() > 0) GTEST_SKIP() << "this machine has a CUDA device";
  WorkerOptions cuda = options();
  cuda.device = "cuda:0";
  Worker worker(cuda);
  try {
    worker.device_arch();
    FAIL() << "a CUDA worker started without a CUDA device";
  } catch (const InternalError& error) {
    std::string message = error.what();
    EXPECT_TRUE(message.find("no CUDA device") != std::string::npos ||
                message.find("without CUDA support") != std::string::npos)
        << message;
  }
  EXPECT_THROW(load(worker, "vector_add"), InternalError);
}

TEST_F(WorkerTest, ArenaGrowthReachesTheWorker) {
  Worker worker(options());
  ASSERT_EQ(load(worker, "vector_add").outcome, CallOutcome::Ok);
  ASSERT_EQ(worker.execute(vector_add_request(worker)).outcome, CallOutcome::Ok);

  ArenaLayout layout;
  layout.add(DType::UInt8, {int64_t{3} << 20});  // push the tensors past the first mapping
  ExecuteRequest request;
  request.inputs = {layout.add(DType::Float32, {kCount}), layout.add(DType::Float32, {kCount})};
  request.outputs = {layout.add(DType::Float32, {kCount})};
  request.output_poison = {kPoison};
  request.flush_cache = false;
  worker.arena(layout.end);
  for (int64_t i = 0; i < kCount; ++i) {
    floats(worker, request.inputs[0])[i] = static_cast<float>(i);
    floats(worker, request.inputs[1])[i] = static_cast<float>(2 * i);
  }
  ASSERT_EQ(worker.execute(request).outcome, CallOutcome::Ok);
  expect_sums(worker, request);
}

TEST_F(WorkerTest, RequestOutsideTheArenaIsRejected) {
  Worker worker(options());
  ASSERT_EQ(load(worker, "vector_add").outcome, CallOutcome::Ok);
  ExecuteRequest request = vector_add_request(worker);
  request.outputs[0].offset = worker.arena(0).size();
  EXPECT_THROW(worker.execute(request), InternalError);
}

TEST_F(WorkerTest, WorkerKilledBetweenCallsIsReplacedSilently) {
  Worker worker(options());
  ASSERT_EQ(load(worker, "vector_add").outcome, CallOutcome::Ok);
  ASSERT_EQ(worker.execute(vector_add_request(worker)).outcome, CallOutcome::Ok);
  std::string description = worker.device_description();
  EXPECT_EQ(description.rfind("cpu: ", 0), 0u) << description;
  EXPECT_EQ(worker.device_arch(), "");

  pid_t child = worker_child();
  ASSERT_GT(child, 0);
  kill(child, SIGKILL);
  while (process_state(child) != 'Z') std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ExecuteRequest request = vector_add_request(worker);
  ASSERT_EQ(worker.execute(request).outcome, CallOutcome::Ok);
  expect_sums(worker, request);
}

// One call as Stage, Run and Collect: the outputs come back only with Collect, the Run reply
// carries the call's time, and parts out of order are refused rather than run.
TEST_F(WorkerTest, StagedCallRunsInThreeRequests) {
  Worker worker(options());
  ASSERT_EQ(load(worker, "vector_add").outcome, CallOutcome::Ok);
  ExecuteRequest request = vector_add_request(worker);
  request.flush_cache = true;
  request.phase = RequestPhase::Stage;
  ExecuteResult staged = worker.execute(request);
  ASSERT_EQ(staged.outcome, CallOutcome::Ok) << staged.message;
  EXPECT_TRUE(staged.times_ns.empty());
  request.phase = RequestPhase::Run;
  ExecuteResult run = worker.execute(request);
  ASSERT_EQ(run.outcome, CallOutcome::Ok) << run.message;
  ASSERT_EQ(run.times_ns.size(), 1u);
  EXPECT_EQ(floats(worker, request.outputs[0])[7], 0.0f) << "written back before Collect";
  request.phase = RequestPhase::Collect;
  ASSERT_EQ(worker.execute(request).outcome, CallOutcome::Ok);
  expect_sums(worker, request);

  // Collected already; a second Collect or a Run without a Stage is a protocol error.
  EXPECT_THROW(worker.execute(request), InternalError);
  request.phase = RequestPhase::Run;
  EXPECT_THROW(worker.execute(request), InternalError);
  request.phase = RequestPhase::Run;
  request.iterations = 2;
  EXPECT_THROW(worker.execute(request), InternalError);  // a staged call is one call
}

// A worker that dies after staging a call has lost it: its Run is reported as a crash, not
// run on the inputs a new worker never staged.
TEST_F(WorkerTest, WorkerKilledAfterStagingLosesTheCall) {
  Worker worker(options());
  ASSERT_EQ(load(worker, "vector_add").outcome, CallOutcome::Ok);
  ExecuteRequest request = vector_add_request(worker);
  request.phase = RequestPhase::Stage;
  ASSERT_EQ(worker.execute(request).outcome, CallOutcome::Ok);
  pid_t child = worker_child();
  ASSERT_GT(child, 0);
  kill(child, SIGKILL);
  while (process_state(child) != 'Z') std::this_thread::sleep_for(std::chrono::milliseconds(1));
  request.phase = RequestPhase::Run;
  const ExecuteResult run = worker.execute(request);
  EXPECT_EQ(run.outcome, CallOutcome::Crashed);
  EXPECT_NE(run.message.find("between the parts of a call"), std::string::npos) << run.message;
  request.phase = RequestPhase::Whole;
  ASSERT_EQ(worker.execute(request).outcome, CallOutcome::Ok);
  expect_sums(worker, request);
}

TEST_F(WorkerTest, MissingExecutableIsAnInternalError) {
  WorkerOptions broken = options();
  broken.executable = "/nonexistent/kernelarc";
  Worker worker(broken);
  EXPECT_THROW(load(worker, "vector_add"), InternalError);
}

}  // namespace
}  // namespace kernelarc
