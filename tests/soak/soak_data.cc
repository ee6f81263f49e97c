// The soak's data: every rank's input element i of an op is a function of (op seed, part, global
// rank, i), so each rank computes every other rank's input, and from those the expected result
// of any collective, without communication. Reductions draw inputs whose results are exact (small
// integers where the average divides, multiples of 1/4 for floats, factors near one for
// products); copies (allgather, broadcast, alltoall) draw raw bits and compare them bit for bit.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "../mpi/reference.h"
#include "soak.h"

namespace soak {

namespace {

uint64_t stream_base(const Op& op, size_t part, int rank) {
  return mix(op.seed ^ (static_cast<uint64_t>(part + 1) << 40) ^
             (static_cast<uint64_t>(rank + 1) << 52));
}

std::vector<uint64_t> member_bases(const Op& op, size_t part) {
  std::vector<uint64_t> bases;
  for (int r : op.members) bases.push_back(stream_base(op, part, r));
  return bases;
}

// Integer reduction inputs: full range where results only wrap or compare; small values for
// the average, whose exact sum must not wrap; factors near one for products (they still wrap).
template <typename T>
T int_input(uint64_t raw, int32_t op) {
  constexpr bool kSigned = std::is_signed<T>::value;
  if (op == HVD_OP_AVERAGE) {
    return static_cast<T>(kSigned ? static_cast<int64_t>(raw % 31) - 15
                                  : static_cast<int64_t>(raw % 32));
  }
  if (op == HVD_OP_PRODUCT) {
    static const int64_t kSignedFactors[] = {-1, 1, 2, 1};
    return static_cast<T>(kSigned ? kSignedFactors[raw % 4] : static_cast<int64_t>(raw % 4));
  }
  return static_cast<T>(raw);
}

// Float reduction inputs: a few values, all exact in every float dtype, bfloat16 included.
int float_choices(int32_t op) {
  return op == HVD_OP_PRODUCT ? 6 : (op == HVD_OP_MIN || op == HVD_OP_MAX) ? 65 : 17;
}
double float_input(uint64_t raw, int32_t op) {
  static const double kFactors[] = {0.5, 1.0, 2.0, -1.0, -0.5, 1.0};
  const int64_t k = static_cast<int64_t>(raw % static_cast<uint64_t>(float_choices(op)));
  if (op == HVD_OP_PRODUCT) return kFactors[k];
  return static_cast<double>(k - float_choices(op) / 2) * 0.25;
}

double epsilon(int32_t dtype) {
  switch (dtype) {
    case HVD_FLOAT64:
      return 0x1.0p-52;
    case HVD_FLOAT32:
      return 0x1.0p-23;
    case HVD_FLOAT16:
      return 0x1.0p-10;
    default:
      return 0x1.0p-7;  // bfloat16
  }
}

template <typename T>
void fill_raw(uint64_t base, size_t begin, size_t count, bool boolean, void* buf) {
  T* out = static_cast<T*>(buf);
  for (size_t j = 0; j < count; ++j) {
    const uint64_t raw = mix(base + begin + j);
    out[j] = static_cast<T>(boolean ? raw & 1 : raw);
  }
}

template <typename T>
void fill_ints(uint64_t base, size_t begin, size_t count, int32_t op, void* buf) {
  T* out = static_cast<T*>(buf);
  for (size_t j = 0; j < count; ++j) out[j] = int_input<T>(mix(base + begin + j), op);
}

void fill_floats(uint64_t base, size_t begin, size_t count, int32_t dtype, int32_t op, void* buf) {
  // The few possible values encoded once; element j picks one by its raw draw.
  const int choices = float_choices(op);
  std::vector<unsigned char> table(static_cast<size_t>(choices) * 8);
  const size_t width = hvdc_test::dtype_bytes(dtype);
  for (int k = 0; k < choices; ++k) {
    hvdc_test::store_float(table.data(), static_cast<size_t>(k), dtype,
                           float_input(static_cast<uint64_t>(k), op));
  }
  unsigned char* out = static_cast<unsigned char*>(buf);
  for (size_t j = 0; j < count; ++j) {
    const uint64_t k = mix(base + begin + j) % static_cast<uint64_t>(choices);
    std::memcpy(out + j * width, table.data() + k * width, width);
  }
}

template <typename T>
T expect_int(const std::vector<uint64_t>& bases, size_t i, int32_t op) {
  if (op == HVD_OP_AVERAGE) {
    int64_t sum = 0;
    for (uint64_t b : bases) sum += static_cast<int64_t>(int_input<T>(mix(b + i), op));
    return static_cast<T>(sum / static_cast<int64_t>(bases.size()));
  }
  T acc = int_input<T>(mix(bases[0] + i), op);
  for (size_t r = 1; r < bases.size(); ++r) {
    const T x = int_input<T>(mix(bases[r] + i), op);
    if (op == HVD_OP_SUM) {
      acc = static_cast<T>(static_cast<uint64_t>(acc) + static_cast<uint64_t>(x));
    } else if (op == HVD_OP_PRODUCT) {
      acc = static_cast<T>(static_cast<uint64_t>(acc) * static_cast<uint64_t>(x));
    } else {
      acc = op == HVD_OP_MIN ? std::min(acc, x) : std::max(acc, x);
    }
  }
  return acc;
}

template <typename T>
bool check_ints(const std::vector<uint64_t>& bases, const void* got, size_t begin, size_t count,
                int32_t op, std::string* why) {
  const T* have = static_cast<const T*>(got);
  for (size_t j = 0; j < count; ++j) {
    const T want = expect_int<T>(bases, begin + j, op);
    if (have[j] == want) continue;
    *why = "element " + std::to_string(begin + j) + ": got " +
           std::to_string(static_cast<long long>(have[j])) + ", want " +
           std::to_string(static_cast<long long>(want));
    return false;
  }
  return true;
}

// BOOL: SUM and MAX are OR, PRODUCT and MIN are AND.
bool check_bools(const std::vector<uint64_t>& bases, const void* got, size_t begin, size_t count,
                 int32_t op, std::string* why) {
  const bool is_and = op == HVD_OP_PRODUCT || op == HVD_OP_MIN;
  const uint8_t* have = static_cast<const uint8_t*>(got);
  for (size_t j = 0; j < count; ++j) {
    uint8_t want = is_and ? 1 : 0;
    for (uint64_t b : bases) {
      const uint8_t x = static_cast<uint8_t>(mix(b + begin + j) & 1);
      want = is_and ? (want & x) : (want | x);
    }
    if (have[j] == want) continue;
    *why = "element " + std::to_string(begin + j) + ": got " + std::to_string(have[j]) + ", want " +
           std::to_string(want);
    return false;
  }
  return true;
}

bool check_floats(const Op& op, int32_t dtype, const std::vector<uint64_t>& bases, const void* got,
                  size_t begin, size_t count, std::string* why) {
  const int32_t rop = op.reduce_op;
  const double m = static_cast<double>(bases.size());
  for (size_t j = 0; j < count; ++j) {
    double acc = 0.0, bound = 0.0;
    for (size_t r = 0; r < bases.size(); ++r) {
      const double x = float_input(mix(bases[r] + begin + j), rop) * op.prescale;
      bound += std::fabs(x);
      if (r == 0 || rop == HVD_OP_SUM || rop == HVD_OP_AVERAGE) {
        acc = r == 0 ? x : acc + x;
      } else if (rop == HVD_OP_PRODUCT) {
        acc *= x;
      } else {
        acc = rop == HVD_OP_MIN ? std::fmin(acc, x) : std::fmax(acc, x);
      }
    }
    if (rop == HVD_OP_AVERAGE) acc /= m;
    acc *= op.postscale;
    // Rounding of partial sums (a few ulps of the largest) and of the average's division.
    const double tol = epsilon(dtype) * (m + 2) * (bound * op.postscale + 1);
    const double have = hvdc_test::load_float(got, j, dtype);
    if (std::fabs(have - acc) <= tol) continue;
    *why = "element " + std::to_string(begin + j) + ": got " + std::to_string(have) + ", want " +
           std::to_string(acc) + " (tolerance " + std::to_string(tol) + ")";
    return false;
  }
  return true;
}

template <typename T>
bool check_raw(uint64_t base, const void* got, size_t begin, size_t count, bool boolean,
               std::string* why) {
  const T* have = static_cast<const T*>(got);
  for (size_t j = 0; j < count; ++j) {
    const uint64_t raw = mix(base + begin + j);
    const T want = static_cast<T>(boolean ? raw & 1 : raw);
    if (have[j] == want) continue;
    *why = "element " + std::to_string(begin + j) + ": got bits " +
           std::to_string(static_cast<unsigned long long>(have[j])) + ", want " +
           std::to_string(static_cast<unsigned long long>(want));
    return false;
  }
  return true;
}

}  // namespace

size_t elements_of(const std::vector<int64_t>& shape) {
  size_t n = 1;
  for (int64_t d : shape) n *= static_cast<size_t>(d);
  return n;
}

size_t row_elements(const std::vector<int64_t>& shape) {
  size_t n = 1;
  for (size_t i = 1; i < shape.size(); ++i) n *= static_cast<size_t>(shape[i]);
  return n;
}

bool is_reduction(Kind kind) {
  return kind == Kind::kAllreduce || kind == Kind::kGrouped || kind == Kind::kReducescatter;
}

void fill_input(const Op& op, size_t part, int rank, size_t begin, size_t count, void* buf) {
  const int32_t d = op.parts[part].dtype;
  const uint64_t base = stream_base(op, part, rank);
  if (!is_reduction(op.kind) || d == HVD_BOOL) {
    switch (hvdc_test::dtype_bytes(d)) {
      case 1:
        return fill_raw<uint8_t>(base, begin, count, d == HVD_BOOL, buf);
      case 2:
        return fill_raw<uint16_t>(base, begin, count, false, buf);
      case 4:
        return fill_raw<uint32_t>(base, begin, count, false, buf);
      default:
        return fill_raw<uint64_t>(base, begin, count, false, buf);
    }
  }
  if (hvdc_test::is_float(d)) return fill_floats(base, begin, count, d, op.reduce_op, buf);
  switch (d) {
    case HVD_UINT8:
      return fill_ints<uint8_t>(base, begin, count, op.reduce_op, buf);
    case HVD_INT8:
      return fill_ints<int8_t>(base, begin, count, op.reduce_op, buf);
    case HVD_UINT16:
      return fill_ints<uint16_t>(base, begin, count, op.reduce_op, buf);
    case HVD_INT16:
      return fill_ints<int16_t>(base, begin, count, op.reduce_op, buf);
    case HVD_INT32:
      return fill_ints<int32_t>(base, begin, count, op.reduce_op, buf);
    default:
      return fill_ints<int64_t>(base, begin, count, op.reduce_op, buf);
  }
}

bool check_reduction(const Op& op, size_t part, const void* got, size_t begin, size_t count,
                     std::string* why) {
  const int32_t d = op.parts[part].dtype;
  const std::vector<uint64_t> bases = member_bases(op, part);
  const int32_t rop = op.reduce_op;
  if (d == HVD_BOOL) return check_bools(bases, got, begin, count, rop, why);
  if (hvdc_test::is_float(d)) return check_floats(op, d, bases, got, begin, count, why);
  switch (d) {
    case HVD_UINT8:
      return check_ints<uint8_t>(bases, got, begin, count, rop, why);
    case HVD_INT8:
      return check_ints<int8_t>(bases, got, begin, count, rop, why);
    case HVD_UINT16:
      return check_ints<uint16_t>(bases, got, begin, count, rop, why);
    case HVD_INT16:
      return check_ints<int16_t>(bases, got, begin, count, rop, why);
    case HVD_INT32:
      return check_ints<int32_t>(bases, got, begin, count, rop, why);
    default:
      return check_ints<int64_t>(bases, got, begin, count, rop, why);
  }
}

bool check_copy(const Op& op, size_t part, int src, const void* got, size_t begin, size_t count,
                std::string* why) {
  const int32_t d = op.parts[part].dtype;
  const uint64_t base = stream_base(op, part, src);
  bool ok = true;
  switch (hvdc_test::dtype_bytes(d)) {
    case 1:
      ok = check_raw<uint8_t>(base, got, begin, count, d == HVD_BOOL, why);
      break;
    case 2:
      ok = check_raw<uint16_t>(base, got, begin, count, false, why);
      break;
    case 4:
      ok = check_raw<uint32_t>(base, got, begin, count, false, why);
      break;
    default:
      ok = check_raw<uint64_t>(base, got, begin, count, false, why);
  }
  if (!ok) *why = "from rank " + std::to_string(src) + ", " + *why;
  return ok;
}

}  // namespace soak
