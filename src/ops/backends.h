// The backends this build has, by the device type (HVD_DEVICE_*) whose memory each serves.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>

#include "ops/backend.h"

namespace hvdc::ops {

std::map<int32_t, std::unique_ptr<Backend>> make_backends(const BackendOptions& options);

}  // namespace hvdc::ops
