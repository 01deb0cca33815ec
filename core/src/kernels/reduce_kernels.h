#pragma once
// Type-erased element-wise reductions and scaling: the arithmetic every
// data plane (MPI custom ops, the in-process transport, the ring) shares.
// float16/bfloat16 compute in float32 and round once per step.

#include <cstdint>

#include "chorus/types.h"

namespace chorus::detail {

/// inout[i] = op(inout[i], in[i]) for i < count. Average reduces as Sum (the
/// division happens in the scaling step). Bool: min is AND, max is OR.
void reduce_into(void* inout, const void* in, int64_t count, DataType dtype, ReduceOp op);

/// out[i] = op(a[i], b[i]). `out` may be `a` (in place); otherwise the
/// three ranges must not overlap.
void reduce_to(void* out, const void* a, const void* b, int64_t count, DataType dtype, ReduceOp op);

/// dst[i] = src[i] * factor / divisor (dst may equal src). Floating types
/// multiply by factor/divisor. Integer types with factor 1 divide in
/// integers (exact for every int64, truncating toward zero: Average of
/// integers is the truncated mean); with another factor they compute in
/// double, truncate toward zero and saturate at the type's range.
void scale_copy(void* dst, const void* src, int64_t count, DataType dtype, double factor,
                int64_t divisor);

/// True when allreduce supports `op` on `dtype` (bool: min and max only; Adasum: float types only).
bool reduction_supported(DataType dtype, ReduceOp op);

}  // namespace chorus::detail
