// Exact integer averages. Summing the caller's integers in their own width wraps (int8 100 on
// three ranks sums to 44), yet the average of in-range values is always in range. So an integer
// average is reduced in a wide form, int64 lanes that a plain wrapping int64 SUM combines
// exactly, and narrowed back to the dtype once the sum is complete:
//  - up to 32 bits: one lane, the value itself (n values sum exactly below n = 2^31);
//  - int64: two lanes, q = floor(x / n) and r = x - q n in [0, n). The sum of the q wraps, but
//    sum(x) / n = sum(q) + sum(r) / n, whose floor (in range) comes out exact modulo 2^64, and
//    sum(r) < n^2 is exact.
#pragma once

#include <cstddef>
#include <cstdint>

namespace hvdc::ops::cpu {

// True for an average over more than one rank of an integer dtype (not bool): the cases whose
// plain sum could wrap before the division.
bool needs_average_lanes(int32_t dtype, int32_t op, int64_t divisor);

// int64 lanes per element of dtype in the wide form (1 or 2); dtype is an integer dtype.
size_t average_lanes(int32_t dtype);

// Writes count elements of src in the wide form for an average over `divisor` ranks to
// wide[0, count * average_lanes(dtype)).
void widen_for_average(int64_t* wide, const void* src, size_t count, int32_t dtype,
                       int64_t divisor);

// dst[i] = (sum over ranks of element i) / divisor, truncated toward zero, from the sum over
// ranks of each rank's wide form (an int64 SUM of the lanes, wrapping).
void narrow_average(void* dst, const int64_t* wide, size_t count, int32_t dtype, int64_t divisor);

}  // namespace hvdc::ops::cpu
