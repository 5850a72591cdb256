// Test candidates for tests/backend: one well-behaved entry point and one per misbehaviour the
// worker must survive. Every entry point follows the kernelarc ABI; a test picks one by symbol.
#include <kernelarc/abi.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace {

const char* last_error = nullptr;

int64_t numel(const ka_tensor& tensor) {
  int64_t count = 1;
  for (int dim = 0; dim < tensor.ndim; ++dim) count *= tensor.shape[dim];
  return count;
}

int add(const ka_tensor* inputs, ka_tensor* outputs) {
  const auto* a = static_cast<const float*>(inputs[0].data);
  const auto* b = static_cast<const float*>(inputs[1].data);
  auto* out = static_cast<float*>(outputs[0].data);
  for (int64_t i = 0; i < numel(outputs[0]); ++i) out[i] = a[i] + b[i];
  return 0;
}

}  // namespace

extern "C" {

const char* ka_last_error(void) {
  return last_error;
}

/// outputs[0] = inputs[0] + inputs[1], float32.
int vector_add(const ka_tensor* inputs, int n_inputs, ka_tensor* outputs, int n_outputs, void*,
               void*, size_t) {
  if (n_inputs != 2 || n_outputs != 1) {
    last_error = "vector_add takes 2 inputs and 1 output";
    return 1;
  }
  return add(inputs, outputs);
}

/// Leaves the output as the guard poisoned it.
int write_nothing(const ka_tensor*, int, ka_tensor*, int, void*, void*, size_t) {
  return 0;
}

/// Records the address of inputs[0] on every call; outputs[0] (int64, 16 elements) receives the
/// addresses seen so far, zeros after them.
int record_addresses(const ka_tensor* inputs, int, ka_tensor* outputs, int, void*, void*, size_t) {
  static int64_t seen[16];
  static int calls = 0;
  if (calls < 16) seen[calls++] = reinterpret_cast<int64_t>(inputs[0].data);
  auto* out = static_cast<int64_t*>(outputs[0].data);
  for (int i = 0; i < 16; ++i) out[i] = i < calls ? seen[i] : 0;
  return 0;
}

/// Prints to stdout, then fails with a message.
int fail_with_message(const ka_tensor*, int, ka_tensor*, int, void*, void*, size_t) {
  std::printf("about to fail\n");
  last_error = "shape 42 is not supported";
  return 7;
}

/// Dereferences null when inputs[0][0] == 1, else behaves as vector_add.
int crash_if_flagged(const ka_tensor* inputs, int, ka_tensor* outputs, int, void*, void*, size_t) {
  if (static_cast<const float*>(inputs[0].data)[0] == 1.0f) {
    volatile int* null = nullptr;
    *null = 1;
  }
  return add(inputs, outputs);
}

/// Never returns.
int spin_forever(const ka_tensor*, int, ka_tensor*, int, void*, void*, size_t) {
  volatile uint64_t spins = 0;
  for (;;) spins = spins + 1;
}

/// Allocates and touches 64 GiB in 64 MiB steps, ignoring failed allocations.
int allocate_forever(const ka_tensor*, int, ka_tensor*, int, void*, void*, size_t) {
  static char* volatile blocks[1024];
  constexpr size_t kBlock = size_t{64} << 20;
  for (int i = 0; i < 1024; ++i) {
    blocks[i] = static_cast<char*>(std::malloc(kBlock));
    std::memset(blocks[i], 1, kBlock);
  }
  return 0;
}

/// Asks operator new for 64 GiB, which throws std::bad_alloc under the memory limit.
int throw_bad_alloc(const ka_tensor*, int, ka_tensor*, int, void*, void*, size_t) {
  static char* volatile block;
  block = new char[size_t{64} << 30];
  block[0] = 1;
  return 0;
}

/// Ends the whole process in the middle of the call, with a success status.
int exit_mid_call(const ka_tensor*, int, ka_tensor*, int, void*, void*, size_t) {
  std::exit(0);
}

/// Writes a bogus frame header to the reply pipe (fd 4), as a candidate faking results might.
int forge_reply(const ka_tensor*, int, ka_tensor*, int, void*, void*, size_t) {
  const unsigned char header[4] = {0xff, 0xff, 0xff, 0x7f};
  if (write(4, header, sizeof header) != 4) return 1;
  return 0;
}

/// Starts a background thread on its second call.
int spawn_thread(const ka_tensor*, int, ka_tensor*, int, void*, void*, size_t) {
  static int calls = 0;
  if (++calls == 2) std::thread([] { pause(); }).detach();
  return 0;
}

}  // extern "C"
