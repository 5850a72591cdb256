// The worker's integrity checks: a candidate that patches the worker's code or relocation
// tables, or defines a function the worker's clock depends on, is caught as Tampered; an honest
// candidate never is.
#include "backend/worker/worker_integrity.h"

#include <dlfcn.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <iostream>

#include "backend/worker/worker.h"
#include "worker_probe.h"

namespace kernelarc {
namespace {

using ::testing::HasSubstr;

/// Flips one byte of mapped read-only memory (code or RELRO) of this process.
void flip_byte(void* address) {
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  auto* start = reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(address) & ~(page - 1));
  ASSERT_EQ(mprotect(start, page, PROT_READ | PROT_WRITE | PROT_EXEC), 0);
  *static_cast<volatile unsigned char*>(address) ^= 0x01;
  ASSERT_EQ(mprotect(start, page, PROT_READ | PROT_EXEC), 0);
}

// The same flip, as a candidate does it from inside the worker.
const char* kFlipByte = R"(
static void flip_byte(void* address) {
  uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
  void* start = (void*)((uintptr_t)address & ~(page - 1));
  mprotect(start, page, PROT_READ | PROT_WRITE | PROT_EXEC);
  *(volatile unsigned char*)address ^= 0x01;
  mprotect(start, page, PROT_READ | PROT_EXEC);
}
)";

class WorkerIntegrityTest : public ::testing::Test {
 protected:
  test::ProbeWorkspace workspace;
};

TEST_F(WorkerIntegrityTest, PatchingLibcsClockInAConstructorIsCaughtAtLoad) {
  Worker worker(workspace.options());
  std::filesystem::path library = workspace.build(std::string(kFlipByte) + R"(
    __attribute__((constructor)) static void tamper() {
      flip_byte(dlsym(RTLD_DEFAULT, "clock_gettime"));
    }
    extern "C" int ka_run(const ka_tensor*, int, ka_tensor*, int, void*, void*, size_t) {
      return 0;
    }
  )");
  ExecuteResult result = worker.load(library, "ka_run");
  EXPECT_EQ(result.outcome, CallOutcome::Tampered) << result.message;
  EXPECT_THAT(result.message, HasSubstr("modified the worker"));
  EXPECT_THAT(result.message, HasSubstr("executable mapping of libc.so"));
}

TEST_F(WorkerIntegrityTest, PatchingDuringACallIsCaughtByThatRequest) {
  Worker worker(workspace.options());
  std::filesystem::path library = workspace.build(std::string(kFlipByte) + R"(
    extern "C" int ka_run(const ka_tensor*, int, ka_tensor*, int, void*, void*, size_t) {
      flip_byte(dlsym(RTLD_DEFAULT, "clock_gettime"));
      return 0;
    }
  )");
  ASSERT_EQ(worker.load(library, "ka_run").outcome, CallOutcome::Ok);
  ExecuteResult result = test::call_once(worker);
  EXPECT_EQ(result.outcome, CallOutcome::Tampered) << result.message;
  EXPECT_THAT(result.message, HasSubstr("modified the worker"));
  // The tampered worker is gone; an honest candidate then runs in a clean one.
  ASSERT_EQ(worker.load(workspace.build_run("note(\"clean\", true);"), "ka_run").outcome,
            CallOutcome::Ok);
  EXPECT_EQ(test::call_once(worker).message, "clean=ok;");
}

TEST_F(WorkerIntegrityTest, PatchingARelocationTableIsCaught) {
  Worker worker(workspace.options());
  std::filesystem::path library = workspace.build(std::string(kFlipByte) + R"(
    #include <link.h>
    static int flip_libm_relro(dl_phdr_info* info, size_t, void*) {
      if (!strstr(info->dlpi_name, "libm.so")) return 0;
      for (int i = 0; i < info->dlpi_phnum; ++i)
        if (info->dlpi_phdr[i].p_type == PT_GNU_RELRO)
          flip_byte((void*)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr));
      return 1;
    }
    __attribute__((constructor)) static void tamper() { dl_iterate_phdr(flip_libm_relro, 0); }
    extern "C" int ka_run(const ka_tensor*, int, ka_tensor*, int, void*, void*, size_t) {
      return 0;
    }
  )");
  ExecuteResult result = worker.load(library, "ka_run");
  EXPECT_EQ(result.outcome, CallOutcome::Tampered) << result.message;
  EXPECT_THAT(result.message, HasSubstr("RELRO region of libm.so"));
}

TEST_F(WorkerIntegrityTest, ALibraryDefiningClockGettimeIsRejectedAtLoad) {
  Worker worker(workspace.options());
  std::filesystem::path library = workspace.build(R"(
    extern "C" int clock_gettime(clockid_t, struct timespec* now) noexcept {
      now->tv_sec = 0;
      now->tv_nsec = 0;
      return 0;
    }
    extern "C" int ka_run(const ka_tensor*, int, ka_tensor*, int, void*, void*, size_t) {
      return 0;
    }
  )");
  ExecuteResult result = worker.load(library, "ka_run");
  EXPECT_EQ(result.outcome, CallOutcome::Tampered) << result.message;
  EXPECT_THAT(result.message, HasSubstr("shadows clock_gettime"));
}

TEST_F(WorkerIntegrityTest, AnHonestCandidatePassesRepeatedRequests) {
  Worker worker(workspace.options());
  std::filesystem::path library = workspace.build(R"(
    extern "C" int ka_run(const ka_tensor*, int, ka_tensor*, int, void*, void*, size_t) {
      volatile double sum = 0;
      #pragma omp parallel for reduction(+ : sum)
      for (int i = 0; i < 100000; ++i) sum = sum + i * 0.5;
      timespec now{};
      clock_gettime(CLOCK_MONOTONIC, &now);
      return sum > 0 ? 0 : 1;
    }
  )",
                                                  {"-fopenmp"});
  ASSERT_EQ(worker.load(library, "ka_run").outcome, CallOutcome::Ok);
  worker.arena(64);
  ExecuteRequest request;
  request.warmup = 2;
  request.iterations = 5;
  for (int round = 0; round < 5; ++round) {
    ExecuteResult result = worker.execute(request);
    ASSERT_EQ(result.outcome, CallOutcome::Ok) << round << ": " << result.message;
    EXPECT_EQ(result.times_ns.size(), 5u);
  }
  // Reloading the same library is no false alarm either.
  EXPECT_EQ(worker.load(library, "ka_run").outcome, CallOutcome::Ok);
}

TEST(IntegrityCheck, SeesAChangedByteAndItsRestoration) {
  IntegrityCheck check;
  std::vector<std::string> objects = check.objects();
  EXPECT_NE(std::find_if(objects.begin(), objects.end(),
                         [](const std::string& name) { return name.rfind("libc.so", 0) == 0; }),
            objects.end());
  EXPECT_EQ(check.changes(), "");
  void* unused = dlsym(RTLD_DEFAULT, "strfry");  // a libc function nothing here calls
  ASSERT_NE(unused, nullptr);
  flip_byte(unused);
  std::string change = check.changes();
  flip_byte(unused);
  EXPECT_THAT(change, HasSubstr("modified the worker"));
  EXPECT_THAT(change, HasSubstr("executable mapping of libc.so"));
  EXPECT_EQ(check.changes(), "");
}

// Every executable mapping is watched, not a list of libraries: the hash library (which the
// check itself uses) was outside the old list (issue 24, class 6).
TEST(IntegrityCheck, SeesAChangeInAnyLibraryLoadedBeforeIt) {
  IntegrityCheck check;
  void* unused = dlsym(RTLD_DEFAULT, "XXH32");  // libxxhash; the check uses XXH3 only
  ASSERT_NE(unused, nullptr);
  Dl_info info{};
  ASSERT_NE(dladdr(unused, &info), 0);
  flip_byte(unused);
  std::string change = check.changes();
  flip_byte(unused);
  EXPECT_THAT(change, HasSubstr("modified the worker"));
  EXPECT_THAT(change, HasSubstr("libxxhash")) << info.dli_fname;
  EXPECT_EQ(check.changes(), "");
}

TEST(IntegrityCheck, ReportsItsCost) {
  IntegrityCheck check;
  constexpr int kChecks = 20;
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kChecks; ++i) EXPECT_EQ(check.changes(), "");
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() /
      kChecks;
  // Reported, not asserted: timings depend on the machine.
  std::cout << "integrity check: " << check.bytes() / 1024 << " KiB in " << check.objects().size()
            << " objects, " << ms << " ms per check" << std::endl;
  ::testing::Test::RecordProperty("integrity_check_ms", std::to_string(ms));
  EXPECT_GT(check.bytes(), 0u);
}

TEST(ShadowedSymbol, TheCudaRuntimesOwnCopyIsExemptButALoneDefinitionIsNot) {
  test::ProbeWorkspace workspace;
  const std::string event_record =
      "extern \"C\" int cudaEventRecord(void*, void*) { return 0; }\n"
      "extern \"C\" int ka_run(const ka_tensor*, int, ka_tensor*, int, void*, void*, size_t) "
      "{ return 0; }\n";
  std::filesystem::path lone = workspace.build(event_record);
  std::filesystem::path with_runtime = workspace.build(
      event_record + "extern \"C\" void** __cudaRegisterFatBinary(void*) { return nullptr; }\n");
  void* lone_handle = dlopen(lone.c_str(), RTLD_NOW | RTLD_LOCAL);
  void* runtime_handle = dlopen(with_runtime.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lone_handle, nullptr) << dlerror();
  ASSERT_NE(runtime_handle, nullptr) << dlerror();
  EXPECT_THAT(shadowed_symbol(lone_handle), HasSubstr("shadows cudaEventRecord"));
  EXPECT_EQ(shadowed_symbol(runtime_handle), "");
}

}  // namespace
}  // namespace kernelarc
