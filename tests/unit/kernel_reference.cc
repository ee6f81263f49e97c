#include "kernel_reference.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace kernel_test {

using hvdc::common::dtype_size;

double ref_decode(uint16_t h, Fmt f) {
  const int e = (h >> f.mant) & ((1 << f.exp) - 1);
  const int m = h & ((1 << f.mant) - 1);
  double v = std::ldexp(e == 0 ? m : m + (1 << f.mant), std::max(e, 1) - f.bias - f.mant);
  if (e == (1 << f.exp) - 1) v = m != 0 ? std::nan("") : HUGE_VAL;
  return (h & 0x8000) ? -v : v;
}

uint16_t ref_encode(double v, Fmt f) {
  const uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  if (std::isnan(v)) return static_cast<uint16_t>(sign | f.inf() | (1 << (f.mant - 1)));
  const double a = std::fabs(v);
  if (std::isinf(a)) return sign | f.inf();
  if (a == 0) return sign;
  int e;
  std::frexp(a, &e);
  int exp = std::max(e - 1, 1 - f.bias);  // a < 2^(exp+1); subnormals share the minimum exponent
  double n = std::nearbyint(std::ldexp(a, f.mant - exp));
  if (n >= std::ldexp(1.0, f.mant + 1)) {
    n /= 2;
    exp += 1;
  }
  if (exp > f.bias) return sign | f.inf();
  const uint32_t ni = static_cast<uint32_t>(n);
  if (ni < (1u << f.mant)) return static_cast<uint16_t>(sign | ni);
  return static_cast<uint16_t>(sign | ((exp + f.bias) << f.mant) | (ni - (1u << f.mant)));
}

bool is_nan16(uint16_t h, Fmt f) {
  return (h & 0x7FFF) > f.inf();
}
bool is_quiet_nan16(uint16_t h, Fmt f) {
  return is_nan16(h, f) && (h & (1 << (f.mant - 1)));
}

bool same_elem(int32_t dtype, const uint8_t* actual, const uint8_t* expected) {
  if (dtype == HVD_FLOAT32 && std::isnan(load<float>(expected))) {
    return std::isnan(load<float>(actual)) && (load<uint32_t>(actual) & 0x400000);
  }
  if (dtype == HVD_FLOAT64 && std::isnan(load<double>(expected))) {
    return std::isnan(load<double>(actual)) && ((load<uint64_t>(actual) >> 51) & 1);
  }
  if ((dtype == HVD_FLOAT16 || dtype == HVD_BFLOAT16) &&
      is_nan16(load<uint16_t>(expected), fmt_of(dtype))) {
    return is_quiet_nan16(load<uint16_t>(actual), fmt_of(dtype));
  }
  return std::memcmp(actual, expected, dtype_size(dtype)) == 0;
}

std::string elem_str(int32_t dtype, const uint8_t* p) {
  std::string s;
  if (visit_int(dtype, [&](auto t) { s = std::to_string(load<decltype(t)>(p)); })) return s;
  char buf[96] = "?";
  if (dtype == HVD_BOOL) std::snprintf(buf, sizeof buf, "%d", *p);
  if (dtype == HVD_FLOAT32) std::snprintf(buf, sizeof buf, "%a", load<float>(p));
  if (dtype == HVD_FLOAT64) std::snprintf(buf, sizeof buf, "%a", load<double>(p));
  if (dtype == HVD_FLOAT16 || dtype == HVD_BFLOAT16) {
    const uint16_t h = load<uint16_t>(p);
    std::snprintf(buf, sizeof buf, "0x%04x (%a)", h, ref_decode(h, fmt_of(dtype)));
  }
  return buf;
}

namespace {

template <class T>
T random_int(Rng& rng) {
  const T lo = std::numeric_limits<T>::min(), hi = std::numeric_limits<T>::max();
  const T edges[] = {
      0, 1, static_cast<T>(-1), lo, hi, static_cast<T>(lo + 1), static_cast<T>(hi - 1)};
  if (rng() % 4 == 0) return edges[rng() % 7];
  if (rng() % 3 == 0) return static_cast<T>(static_cast<int64_t>(rng() % 33) - 16);
  const uint64_t bits = rng();
  return load<T>(reinterpret_cast<const uint8_t*>(&bits));
}

template <class F>
F random_float(Rng& rng) {
  using L = std::numeric_limits<F>;
  const F inf = L::infinity(), nan = L::quiet_NaN(), tiny = L::denorm_min(), big = L::max();
  const F edges[] = {0,    -F(0), inf,      -inf, nan,  -nan, L::signaling_NaN(),
                     tiny, -tiny, L::min(), big,  -big, 1,    -1};
  const uint64_t bits = rng();
  const uint64_t kind = rng() % 8;
  if (kind == 0) return edges[rng() % 14];
  if (kind == 1) return load<F>(reinterpret_cast<const uint8_t*>(&bits));  // any class
  // Nearby magnitudes, so that sums and products really round.
  const F m = static_cast<F>(static_cast<double>(bits >> 11) / std::ldexp(1.0, 53) + 0.5);
  return (rng() & 1 ? -m : m) * std::ldexp(F(1), static_cast<int>(rng() % 40) - 20);
}

uint16_t random_16(Rng& rng, Fmt f) {
  const uint16_t sign = rng() & 1 ? 0x8000 : 0;
  const uint64_t kind = rng() % 4;
  if (kind == 0) return static_cast<uint16_t>(rng());  // every class, subnormals and NaNs
  if (kind == 1) return static_cast<uint16_t>(sign | rng() % (3u << f.mant));  // subnormals
  // Exponents close to 1.0, so that sums round at the last bit.
  const uint32_t e = f.bias - 3 + rng() % 8;
  return static_cast<uint16_t>(sign | e << f.mant | (rng() & ((1u << f.mant) - 1)));
}

}  // namespace

void fill_random(int32_t dtype, uint8_t* p, size_t n, Rng& rng) {
  const size_t sz = dtype_size(dtype);
  for (size_t i = 0; i < n; ++i) {
    uint8_t* e = p + i * sz;
    if (visit_int(dtype, [&](auto t) { put(e, random_int<decltype(t)>(rng)); })) continue;
    if (dtype == HVD_FLOAT32) put(e, random_float<float>(rng));
    if (dtype == HVD_FLOAT64) put(e, random_float<double>(rng));
    if (dtype == HVD_BOOL) *e = rng() % 3 == 0 ? static_cast<uint8_t>(rng()) : rng() % 2;
    if (dtype == HVD_FLOAT16 || dtype == HVD_BFLOAT16) put(e, random_16(rng, fmt_of(dtype)));
  }
}

void expect_elems(int32_t dtype, const Bytes& in, const Bytes& got, const Bytes& want, size_t n) {
  const size_t sz = dtype_size(dtype);
  int failures = 0;
  for (size_t i = 0; i < n && failures < 5; ++i) {
    if (same_elem(dtype, &got[i * sz], &want[i * sz])) continue;
    ++failures;
    ADD_FAILURE() << "i=" << i << " in=" << elem_str(dtype, &in[i * sz])
                  << " got=" << elem_str(dtype, &got[i * sz])
                  << " want=" << elem_str(dtype, &want[i * sz]);
  }
}

}  // namespace kernel_test
