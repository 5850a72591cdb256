// The in-host pool with real threads: every device measures at once, each one candidate at a
// time, every ticket comes back exactly once and from the device that measured it, results come
// in the order they finish, and an evaluator's failure reaches the caller.
#include "optimize/local_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>

namespace kernelarc {
namespace {

// Deadlock guard of the waits below; a pool that works never comes near it.
constexpr auto kPatience = std::chrono::seconds(30);

/// What the devices share: how many evaluations are inside an evaluator at once, and the
/// solutions the test holds there until it lets them go.
struct Bench {
  std::mutex mutex;
  std::condition_variable changed;
  int inside = 0;
  int most_inside = 0;
  int meet = 1;  ///< an evaluation waits until this many were inside at once
  std::set<std::string> held;
};

/// Counts the evaluations inside it (one device must never hold two) and waits as the bench
/// says; a solution named "throw" fails.
class BenchEvaluator : public CandidateEvaluator {
 public:
  explicit BenchEvaluator(Bench& bench) : bench_(bench) {}

  std::vector<Trace> evaluate(const Solution& solution) override {
    if (++inside_here_ > 1) overlapped_ = true;
    std::unique_lock lock(bench_.mutex);
    bench_.most_inside = std::max(bench_.most_inside, ++bench_.inside);
    bench_.changed.notify_all();
    const bool waited = bench_.changed.wait_for(lock, kPatience, [&] {
      return bench_.most_inside >= bench_.meet && !bench_.held.contains(solution.name);
    });
    --bench_.inside;
    lock.unlock();
    --inside_here_;
    if (!waited) throw std::runtime_error("waited in vain");
    if (solution.name == "throw") throw std::runtime_error("the device fell over");
    Trace trace;
    trace.log = solution.name;
    return {trace};
  }
  std::string device_name() const override { return "bench"; }

  std::atomic<bool> overlapped_ = false;

 private:
  Bench& bench_;
  std::atomic<int> inside_here_ = 0;
};

Solution named(const std::string& name) {
  Solution solution;
  solution.name = name;
  return solution;
}

TEST(LocalEvaluationPool, EveryDeviceMeasuresAtOnceAndEachTicketComesBackOnce) {
  Bench bench;
  bench.meet = 3;
  BenchEvaluator first(bench), second(bench), third(bench);
  std::map<uint64_t, std::string> where;
  {
    LocalEvaluationPool pool({{&first, "d0"}, {&second, "d1"}, {&third, "d2"}});
    EXPECT_EQ(pool.capacity(), 3u);
    for (uint64_t ticket = 0; ticket < 30; ++ticket)
      pool.submit(ticket, named("candidate " + std::to_string(ticket)));
    for (int received = 0; received < 30; ++received) {
      EvaluationPool::Done done = pool.next();
      EXPECT_TRUE(where.emplace(done.ticket, done.where).second) << "twice: " << done.ticket;
      ASSERT_EQ(done.traces.size(), 1u);
      EXPECT_EQ(done.traces[0].log, "candidate " + std::to_string(done.ticket));
    }
  }
  EXPECT_EQ(where.size(), 30u);
  EXPECT_EQ(bench.most_inside, 3);  // all three devices measured at once, never one twice
  EXPECT_FALSE(first.overlapped_ || second.overlapped_ || third.overlapped_);
  std::set<std::string> devices;
  for (const auto& [ticket, device] : where) devices.insert(device);
  EXPECT_EQ(devices, (std::set<std::string>{"d0", "d1", "d2"}));
}

TEST(LocalEvaluationPool, ResultsComeInTheOrderTheyFinish) {
  Bench bench;
  bench.held = {"held"};
  BenchEvaluator first(bench), second(bench);
  LocalEvaluationPool pool({{&first, "d0"}, {&second, "d1"}});
  pool.submit(1, named("held"));
  pool.submit(2, named("free"));
  EXPECT_EQ(pool.next().ticket, 2u);  // submitted later, finished first
  {
    const std::lock_guard lock(bench.mutex);
    bench.held.clear();
  }
  bench.changed.notify_all();
  EXPECT_EQ(pool.next().ticket, 1u);
}

TEST(LocalEvaluationPool, AnEvaluatorsFailureReachesTheCaller) {
  Bench bench;
  BenchEvaluator only(bench);
  LocalEvaluationPool pool({{&only, "d0"}});
  pool.submit(7, named("throw"));
  EXPECT_THROW(pool.next(), std::runtime_error);
  pool.submit(8, named("fine"));
  EXPECT_EQ(pool.next().ticket, 8u);
}

}  // namespace
}  // namespace kernelarc
