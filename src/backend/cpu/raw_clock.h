// CLOCK_MONOTONIC read by a system call issued here, not through libc or the vDSO: a candidate
// runs in the same process and could patch those to make itself look fast. The kernel's code
// is out of its reach. Costs a system call (~0.1-0.3 us) per reading instead of a vDSO call.
#pragma once

#include <sys/syscall.h>
#include <time.h>

#include <cstdint>

namespace kernelarc {

/// Nanoseconds of CLOCK_MONOTONIC.
inline int64_t raw_monotonic_ns() {
  timespec now{};
#if defined(__x86_64__)
  long result;
  asm volatile("syscall"
               : "=a"(result)
               : "0"(long{SYS_clock_gettime}), "D"(long{CLOCK_MONOTONIC}), "S"(&now)
               : "rcx", "r11", "memory");
  (void)result;  // the call cannot fail with a valid clock and buffer
#elif defined(__aarch64__)
  register long number asm("x8") = SYS_clock_gettime;
  register long clock asm("x0") = CLOCK_MONOTONIC;
  register timespec* out asm("x1") = &now;
  asm volatile("svc 0" : "+r"(clock) : "r"(number), "r"(out) : "memory");
#else
#error "raw_monotonic_ns: add the system call sequence of this architecture"
#endif
  return static_cast<int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
}

}  // namespace kernelarc
