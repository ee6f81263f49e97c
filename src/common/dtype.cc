#include "common/dtype.h"

namespace hvdc::common {

bool dtype_valid(int32_t dtype) {
  return dtype >= HVD_UINT8 && dtype <= HVD_BFLOAT16;
}

size_t dtype_size(int32_t dtype) {
  switch (dtype) {
    case HVD_UINT8:
    case HVD_INT8:
    case HVD_BOOL:
      return 1;
    case HVD_UINT16:
    case HVD_INT16:
    case HVD_FLOAT16:
    case HVD_BFLOAT16:
      return 2;
    case HVD_INT32:
    case HVD_FLOAT32:
      return 4;
    case HVD_INT64:
    case HVD_FLOAT64:
      return 8;
    default:
      return 0;
  }
}

const char* dtype_name(int32_t dtype) {
  switch (dtype) {
    case HVD_UINT8:
      return "uint8";
    case HVD_INT8:
      return "int8";
    case HVD_UINT16:
      return "uint16";
    case HVD_INT16:
      return "int16";
    case HVD_INT32:
      return "int32";
    case HVD_INT64:
      return "int64";
    case HVD_FLOAT16:
      return "float16";
    case HVD_FLOAT32:
      return "float32";
    case HVD_FLOAT64:
      return "float64";
    case HVD_BOOL:
      return "bool";
    case HVD_BFLOAT16:
      return "bfloat16";
    default:
      return "invalid";
  }
}

bool dtype_is_float(int32_t dtype) {
  return dtype == HVD_FLOAT16 || dtype == HVD_BFLOAT16 || dtype == HVD_FLOAT32 ||
         dtype == HVD_FLOAT64;
}

bool reduce_op_valid(int32_t op) {
  return op == HVD_OP_AVERAGE || op == HVD_OP_SUM || op == HVD_OP_MIN || op == HVD_OP_MAX ||
         op == HVD_OP_PRODUCT;
}

const char* reduce_op_name(int32_t op) {
  switch (op) {
    case HVD_OP_AVERAGE:
      return "average";
    case HVD_OP_SUM:
      return "sum";
    case HVD_OP_MIN:
      return "min";
    case HVD_OP_MAX:
      return "max";
    case HVD_OP_PRODUCT:
      return "product";
    default:
      return "invalid";
  }
}

}  // namespace hvdc::common
