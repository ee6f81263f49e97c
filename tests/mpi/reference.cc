#include "reference.h"

#include <hvdc.h>

#include <cmath>
#include <cstring>
#include <limits>

namespace hvdc_test {

namespace {

uint64_t mix(uint64_t x) {  // splitmix64
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t raw(const Case& c, int rank, size_t i) {
  return mix((static_cast<uint64_t>(c.dtype) << 56) ^ (static_cast<uint64_t>(c.op) << 48) ^
             (static_cast<uint64_t>(rank) << 40) ^ i);
}

int bits_of(int32_t dtype) {
  return static_cast<int>(dtype_bytes(dtype) * 8);
}
bool is_signed_int(int32_t d) {
  return d == HVD_INT8 || d == HVD_INT16 || d == HVD_INT32 || d == HVD_INT64;
}

// The integer value of `u` truncated to the dtype's width, as the dtype reads it. In 128 bits,
// which hold every int64 and uint64 exactly and convert from them inline (a long double here
// went through libgcc's __fixunsxfti for every element and rank of an average's reference,
// most of the mpi suite's time).
[[gnu::always_inline]] inline __int128 int_value(uint64_t u, int32_t dtype) {
  const int w = bits_of(dtype);
  if (w < 64) u &= (uint64_t{1} << w) - 1;
  if (is_signed_int(dtype) && w < 64 && (u >> (w - 1)) != 0) u |= ~uint64_t{0} << w;
  return is_signed_int(dtype) ? static_cast<__int128>(static_cast<int64_t>(u))
                              : static_cast<__int128>(u);
}

uint64_t load_int(const void* buf, size_t i, int32_t dtype) {
  uint64_t u = 0;
  std::memcpy(&u, static_cast<const char*>(buf) + i * dtype_bytes(dtype), dtype_bytes(dtype));
  return u;
}

long double int_min(int32_t d) {
  return is_signed_int(d) ? -std::ldexp(1.0L, bits_of(d) - 1) : 0.0L;
}
long double int_max(int32_t d) {
  return is_signed_int(d) ? std::ldexp(1.0L, bits_of(d) - 1) - 1 : std::ldexp(1.0L, bits_of(d)) - 1;
}

// Integer scaling: in double, round half to even, saturate.
uint64_t scale_int(uint64_t u, int32_t d, double factor) {
  if (factor == 1.0) return u;
  double v = std::nearbyint(static_cast<double>(int_value(u, d)) * factor);
  long double c = std::fmin(std::fmax(static_cast<long double>(v), int_min(d)), int_max(d));
  return is_signed_int(d) ? static_cast<uint64_t>(static_cast<int64_t>(c))
                          : static_cast<uint64_t>(c);
}

// The inputs are inlined into the reference's loop over the elements (check_allreduce): at np 4
// it computes every rank's input for every element of the 16 MiB cases, and the calls cost 10 %
// of the mpi suite's allreduce matrix.
[[gnu::always_inline]] inline uint64_t int_input(const Case& c, int rank, size_t i) {
  const uint64_t r = raw(c, rank, i);
  if (c.dtype == HVD_BOOL) return r & 1;
  if (c.prescale != 1.0 || c.postscale != 1.0)
    return static_cast<uint64_t>(static_cast<int64_t>(r % 201) - 100);
  if (c.op == HVD_OP_PRODUCT)
    return is_signed_int(c.dtype) ? static_cast<uint64_t>(static_cast<int64_t>(r % 7) - 3) : r % 4;
  return r;  // full range: sums wrap
}

[[gnu::always_inline]] inline double float_input(const Case& c, int rank, size_t i) {
  const uint64_t r = raw(c, rank, i);
  if (c.op == HVD_OP_PRODUCT) {
    static const double kFactors[] = {0.5, 1.0, 1.5, 2.0, -1.0, -0.5};
    return kFactors[r % 6];
  }
  return (static_cast<double>(r % 17) - 8.0) * 0.25;
}

// The exact average: the sum of the prescaled values in 128 bits (it never wraps), divided with
// C's truncation toward zero; the quotient is in the dtype's range.
uint64_t average_int(const Case& c, int size, size_t i) {
  const int32_t d = c.dtype;
  __int128 sum = 0;
  for (int r = 0; r < size; ++r) {
    sum += int_value(scale_int(int_input(c, r, i), d, c.prescale), d);
  }
  const __int128 q = sum / size;
  return scale_int(static_cast<uint64_t>(static_cast<int64_t>(q)), d, c.postscale);
}

uint64_t reduce_int(const Case& c, int size, size_t i) {
  const int32_t d = c.dtype;
  if (c.op == HVD_OP_AVERAGE && d != HVD_BOOL) return average_int(c, size, i);
  uint64_t acc = scale_int(int_input(c, 0, i), d, c.prescale);
  for (int r = 1; r < size; ++r) {
    const uint64_t x = scale_int(int_input(c, r, i), d, c.prescale);
    if (d == HVD_BOOL) {
      const bool a = acc != 0, b = x != 0;
      acc = (c.op == HVD_OP_PRODUCT || c.op == HVD_OP_MIN) ? (a && b) : (a || b);
    } else if (c.op == HVD_OP_SUM) {
      acc += x;
    } else if (c.op == HVD_OP_PRODUCT) {
      acc *= x;
    } else {
      const bool less = int_value(x, d) < int_value(acc, d);
      if ((c.op == HVD_OP_MIN) == less) acc = x;
    }
  }
  return scale_int(acc, d, c.postscale);
}

double reduce_float(const Case& c, int size, size_t i) {
  double acc = float_input(c, 0, i) * c.prescale;
  for (int r = 1; r < size; ++r) {
    const double x = float_input(c, r, i) * c.prescale;
    switch (c.op) {
      case HVD_OP_PRODUCT:
        acc *= x;
        break;
      case HVD_OP_MIN:
        acc = std::fmin(acc, x);
        break;
      case HVD_OP_MAX:
        acc = std::fmax(acc, x);
        break;
      default:
        acc += x;
    }
  }
  if (c.op == HVD_OP_AVERAGE) acc /= size;
  return acc * c.postscale;
}

double tolerance(int32_t dtype, int size) {
  switch (dtype) {
    case HVD_FLOAT64:
      return 1e-12 * size;
    case HVD_FLOAT32:
      return 1e-6 * size;
    case HVD_FLOAT16:
      return 2e-3 * size;
    default:
      return 1.6e-2 * size;  // bfloat16
  }
}

}  // namespace

size_t dtype_bytes(int32_t d) {
  switch (d) {
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
    default:
      return 8;
  }
}

const char* dtype_label(int32_t d) {
  static const char* const kNames[] = {"uint8",   "int8",    "uint16",  "int16", "int32",   "int64",
                                       "float16", "float32", "float64", "bool",  "bfloat16"};
  return d >= 0 && d <= 10 ? kNames[d] : "?";
}

const char* op_label(int32_t op) {
  switch (op) {
    case HVD_OP_AVERAGE:
      return "average";
    case HVD_OP_SUM:
      return "sum";
    case HVD_OP_MIN:
      return "min";
    case HVD_OP_MAX:
      return "max";
    default:
      return "product";
  }
}

bool is_float(int32_t d) {
  return d == HVD_FLOAT16 || d == HVD_BFLOAT16 || d == HVD_FLOAT32 || d == HVD_FLOAT64;
}

double load_float(const void* buf, size_t i, int32_t dtype) {
  const char* p = static_cast<const char*>(buf);
  if (dtype == HVD_FLOAT64) {
    double v;
    std::memcpy(&v, p + 8 * i, 8);
    return v;
  }
  if (dtype == HVD_FLOAT32) {
    float v;
    std::memcpy(&v, p + 4 * i, 4);
    return v;
  }
  uint16_t h;
  std::memcpy(&h, p + 2 * i, 2);
  if (dtype == HVD_BFLOAT16) {
    uint32_t bits = static_cast<uint32_t>(h) << 16;
    float v;
    std::memcpy(&v, &bits, 4);
    return v;
  }
  const int exp = (h >> 10) & 0x1F, mant = h & 0x3FF;
  const double sign = (h & 0x8000) ? -1.0 : 1.0;
  if (exp == 0) return sign * std::ldexp(mant, -24);
  if (exp == 31) return mant ? std::nan("") : sign * INFINITY;
  return sign * std::ldexp(1024 + mant, exp - 25);
}

void store_float(void* buf, size_t i, int32_t dtype, double value) {
  char* p = static_cast<char*>(buf);
  if (dtype == HVD_FLOAT64) {
    std::memcpy(p + 8 * i, &value, 8);
    return;
  }
  float f = static_cast<float>(value);
  if (dtype == HVD_FLOAT32) {
    std::memcpy(p + 4 * i, &f, 4);
    return;
  }
  uint16_t h = 0;
  if (dtype == HVD_BFLOAT16) {
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    h = static_cast<uint16_t>(bits >> 16);  // exact for the test's values
  } else if (value != 0.0) {
    int e;
    const double m = std::frexp(std::fabs(value), &e);  // value = m * 2^e, m in [0.5, 1)
    h = static_cast<uint16_t>(((e + 14) << 10) | (static_cast<int>(m * 2048) - 1024));
    if (value < 0) h |= 0x8000;
  }
  std::memcpy(p + 2 * i, &h, 2);
}

void fill_input(void* buf, size_t count, const Case& c, int rank) {
  for (size_t i = 0; i < count; ++i) {
    if (is_float(c.dtype)) {
      store_float(buf, i, c.dtype, float_input(c, rank, i));
    } else {
      const uint64_t u = int_input(c, rank, i);
      std::memcpy(static_cast<char*>(buf) + i * dtype_bytes(c.dtype), &u, dtype_bytes(c.dtype));
    }
  }
}

bool check_allreduce(const void* got, size_t count, const Case& c, int size, std::string* detail) {
  for (size_t i = 0; i < count; ++i) {
    if (is_float(c.dtype)) {
      const double want = reduce_float(c, size, i), have = load_float(got, i, c.dtype);
      if (std::fabs(have - want) <= tolerance(c.dtype, size) * (std::fabs(want) + 1)) continue;
      *detail = "element " + std::to_string(i) + ": got " + std::to_string(have) + ", want " +
                std::to_string(want);
      return false;
    }
    const uint64_t want = reduce_int(c, size, i);
    const uint64_t have = load_int(got, i, c.dtype);
    if (int_value(have, c.dtype) == int_value(want, c.dtype) &&
        (c.dtype != HVD_BOOL || have == want)) {
      continue;
    }
    *detail = "element " + std::to_string(i) + ": got " +
              std::to_string(static_cast<long long>(int_value(have, c.dtype))) + ", want " +
              std::to_string(static_cast<long long>(int_value(want, c.dtype)));
    return false;
  }
  return true;
}

}  // namespace hvdc_test
