// The backends this build has, by the device type (HVD_DEVICE_*) whose memory each serves.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>

#include "ops/backend.h"

namespace hvdc::device {
class Runtime;
}

namespace hvdc::ops {

// Gives the CUDA device runtime, or why there is none; called on the first CUDA op. The
// production provider is the CUDA plugin's loader; tests inject a host-memory runtime.
using DeviceRuntimeProvider = std::function<Status(device::Runtime**)>;

// The host backend, and, when `device_runtime` is given, the CUDA backend over it.
std::map<int32_t, std::unique_ptr<Backend>> make_backends(
    const BackendOptions& options, DeviceRuntimeProvider device_runtime = nullptr);

}  // namespace hvdc::ops
