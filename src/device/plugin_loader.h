// libhvdc_cuda.so, the plugin that holds everything linked to CUDA and NCCL, loaded on first
// need so that libhvdc.so.0 itself runs where neither is installed.
#pragma once

#include "common/status.h"

namespace hvdc::device {

class Runtime;

// What a build without CUDA tells the user who hands it a CUDA tensor.
extern const char* const kBuildWithCuda;

// The process-wide CUDA runtime, loaded on the first call; later calls return the same one, or
// the same failure. The plugin is HVDC_CUDA_PLUGIN when set, else libhvdc_cuda.so beside
// libhvdc.so, else whatever the dynamic loader finds by that name. HVD_ERR_UNSUPPORTED with the
// loader's or CUDA's text when it cannot be had (and always in a build without CUDA).
common::Status cuda_runtime(Runtime** out);

}  // namespace hvdc::device
