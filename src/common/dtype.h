// Element types and reduce ops as the engine sees them (values are the frozen ones of hvdc.h).
#pragma once

#include <cstddef>
#include <cstdint>

#include "hvdc.h"

namespace hvdc::common {

bool dtype_valid(int32_t dtype);
size_t dtype_size(int32_t dtype);       // 0 for an invalid dtype
const char* dtype_name(int32_t dtype);  // "float32", ...; "invalid" for unknown values
bool dtype_is_float(int32_t dtype);     // float16, bfloat16, float32, float64

bool reduce_op_valid(int32_t op);
const char* reduce_op_name(int32_t op);  // "sum", ...; "invalid" for unknown values

}  // namespace hvdc::common
