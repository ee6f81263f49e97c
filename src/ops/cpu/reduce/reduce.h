// Element-wise reduction kernels for allreduce on host memory.
//
// Callers pass valid dtype / op values (validated at the API boundary). Every kernel is
// deterministic: the same inputs give bit-identical outputs on every rank and every CPU (NaN
// payloads aside), because the per-ISA variants chosen at run time all do the same IEEE
// operations in the same order and round float16 / bfloat16 identically. x86-64 and GCC only
// (target_clones, F16C intrinsics).
#pragma once

#include <cstddef>
#include <cstdint>

namespace hvdc::ops::cpu {

// dst[i] = a[i] (op) b[i] for i < count; dst may alias a or b (exactly, not partially).
// HVD_OP_AVERAGE reduces like HVD_OP_SUM (the division is done by divide(); the collectives
// average integers exactly through average_lanes.h instead).
// Integers: SUM and PRODUCT wrap modulo 2^bits. BOOL (any nonzero byte counts as true, output is
// 0 or 1): SUM = OR, PRODUCT = AND, MIN = AND, MAX = OR, AVERAGE = OR.
// float16 / bfloat16: both sides widened to float32, combined, rounded once (nearest even).
// Floating MIN / MAX follow IEEE 754-2019 minimum / maximum: NaN if either side is NaN (a quiet
// NaN), and -0 < +0. Sums and products follow IEEE; a NaN result is always quiet.
void reduce(void* dst, const void* a, const void* b, size_t count, int32_t dtype, int32_t op);

// x[i] = y[i] = x[i] (op) y[i] for i < count: one pass that stores the result into both
// operands, x the first (the member order decides the bits of a NaN's payload). x and y must not
// overlap. Every dtype but float16 (whose kernel converts through scratch blocks); returns false,
// touching nothing, for float16 and for values reduce() does not take.
bool reduce_into_both(void* x, void* y, size_t count, int32_t dtype, int32_t op);

// dst[i] = src[i] * factor; dst may alias src. Integers: multiply in double, round to nearest
// (ties to even), saturate to the type's range (a NaN product gives 0; int64 values beyond 2^53
// are rounded when converted to double). float16/bfloat16: widen to float32, multiply by
// (float)factor, round once. float32: computed in double then rounded to float. float64: in
// double. bool: (x != 0 && factor != 0).
void scale(void* dst, const void* src, size_t count, int32_t dtype, double factor);

// buf[i] = buf[i] / divisor, divisor >= 1. Integers: truncate toward zero. float16/bfloat16:
// divide in float32 by (float)divisor and round once; float32: in float; float64: in double.
// bool: unchanged.
void divide(void* buf, size_t count, int32_t dtype, int64_t divisor);

}  // namespace hvdc::ops::cpu
