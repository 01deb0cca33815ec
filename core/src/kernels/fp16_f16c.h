#pragma once
// float16 kernels on x86's F16C conversions (8 halves <-> 8 floats per
// instruction), used when the CPU has F16C and AVX; the portable loops in
// reduce_kernels.cc otherwise. Results are bit-identical to the portable
// path for every non-NaN input: both compute in float32 and round to
// nearest even once.

#include <cstdint>

#include "chorus/types.h"

namespace chorus::detail {

/// True when this CPU runs the F16C kernels (checked once).
bool f16c_available();

/// out[i] = op(a[i], b[i]) on float16 bits; `out` may be `a`. Requires f16c_available().
void reduce_fp16_f16c(uint16_t* out, const uint16_t* a, const uint16_t* b, int64_t n, ReduceOp op);

/// dst[i] = src[i] * factor on float16 bits; dst may be src. Requires f16c_available().
void scale_fp16_f16c(uint16_t* dst, const uint16_t* src, int64_t n, float factor);

}  // namespace chorus::detail
