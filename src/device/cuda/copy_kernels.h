// The batched, scaled copy on the device (copy_kernels.cu): what Runtime::batched_copy and
// Runtime::scale_in_place run.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "device/runtime.h"

namespace hvdc::device::cuda {

// Copies every piece, multiplying each element by `scale` (element rules: runtime.h). scale 1.0
// moves bytes (the widest aligned word); an in-place piece with scale 1.0 costs nothing. Launches
// once per kMaxPiecesPerLaunch pieces and returns the first launch error.
cudaError_t launch_batched_copy(const CopyPiece* pieces, size_t n, int32_t dtype,
                                size_t element_size, double scale, cudaStream_t stream);

}  // namespace hvdc::device::cuda
