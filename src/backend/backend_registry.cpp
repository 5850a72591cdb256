// The registry of backends: the one place that knows which device names exist.
#include <map>
#include <mutex>

#include "backend/backend.h"
#include "core/error.h"

namespace kernelarc {

// Each backend's factory returns its Backend for a device name it serves, else nullptr.
std::unique_ptr<Backend> make_cpu_backend(std::string_view device);
std::unique_ptr<Backend> make_cuda_backend(std::string_view device);

namespace {

// One line per backend; the first that serves a name wins.
constexpr std::unique_ptr<Backend> (*kFactories[])(std::string_view) = {
    make_cpu_backend,
    make_cuda_backend,
};

std::unique_ptr<Backend> make_backend(std::string_view device) {
  for (auto factory : kFactories)
    if (auto backend = factory(device)) return backend;
  throw InputError("--device: expected cpu, cuda or cuda:N, got \"" + std::string(device) + "\"");
}

}  // namespace

const Backend& backend_for(std::string_view device) {
  // Backends live as long as the process: callers keep references, and threads share them.
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<Backend>, std::less<>> backends;
  const std::lock_guard lock(mutex);
  auto found = backends.find(device);
  if (found == backends.end())
    found = backends.emplace(std::string(device), make_backend(device)).first;
  return *found->second;
}

}  // namespace kernelarc
