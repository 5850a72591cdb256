// make_cuda_device for builds without CUDA, so that callers link either way and learn at run
// time that the device is unavailable.
#ifndef KERNELARC_WITH_CUDA

#include "backend/device.h"
#include "core/error.h"

namespace kernelarc {

std::unique_ptr<Device> make_cuda_device(int /*ordinal*/, bool /*trace_activity*/) {
  throw InternalError("kernelarc was built without CUDA support");
}

}  // namespace kernelarc

#endif
