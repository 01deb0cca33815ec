#include "kernels/fp16_f16c.h"

#include "common/half.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define CHORUS_X86 1
#endif

namespace chorus::detail {

#if CHORUS_X86

bool f16c_available() {
  static const bool available = __builtin_cpu_supports("f16c") && __builtin_cpu_supports("avx");
  return available;
}

namespace {

// Operands are passed (b, a) so NaN and tie behaviour match the portable
// MinOp/MaxOp (b < a ? b : a; a < b ? b : a).
template <ReduceOp Op>
__attribute__((target("avx,f16c"))) void reduce_f16c(uint16_t* out, const uint16_t* a, const uint16_t* b,
                                                      int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 x = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a + i)));
    const __m256 y = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + i)));
    __m256 r;
    if constexpr (Op == ReduceOp::kSum) r = _mm256_add_ps(x, y);
    else if constexpr (Op == ReduceOp::kProduct) r = _mm256_mul_ps(x, y);
    else if constexpr (Op == ReduceOp::kMin) r = _mm256_min_ps(y, x);
    else r = _mm256_max_ps(y, x);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), _mm256_cvtps_ph(r, _MM_FROUND_TO_NEAREST_INT));
  }
  for (; i < n; ++i) {
    const float x = fp16_to_float(a[i]), y = fp16_to_float(b[i]);
    float r;
    if constexpr (Op == ReduceOp::kSum) r = x + y;
    else if constexpr (Op == ReduceOp::kProduct) r = x * y;
    else if constexpr (Op == ReduceOp::kMin) r = y < x ? y : x;
    else r = x < y ? y : x;
    out[i] = float_to_fp16(r);
  }
}

}  // namespace

void reduce_fp16_f16c(uint16_t* out, const uint16_t* a, const uint16_t* b, int64_t n, ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAverage: reduce_f16c<ReduceOp::kSum>(out, a, b, n); break;
    case ReduceOp::kProduct: reduce_f16c<ReduceOp::kProduct>(out, a, b, n); break;
    case ReduceOp::kMin: reduce_f16c<ReduceOp::kMin>(out, a, b, n); break;
    case ReduceOp::kMax: reduce_f16c<ReduceOp::kMax>(out, a, b, n); break;
    case ReduceOp::kAdasum: break;  // not elementwise: never reaches the kernels
  }
}

__attribute__((target("avx,f16c"))) void scale_fp16_f16c(uint16_t* dst, const uint16_t* src, int64_t n,
                                                          float factor) {
  const __m256 f = _mm256_set1_ps(factor);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 x = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i),
                     _mm256_cvtps_ph(_mm256_mul_ps(x, f), _MM_FROUND_TO_NEAREST_INT));
  }
  for (; i < n; ++i) dst[i] = float_to_fp16(fp16_to_float(src[i]) * factor);
}

#else  // not x86: the portable loops do all the work

bool f16c_available() { return false; }
void reduce_fp16_f16c(uint16_t*, const uint16_t*, const uint16_t*, int64_t, ReduceOp) {}
void scale_fp16_f16c(uint16_t*, const uint16_t*, int64_t, float) {}

#endif

}  // namespace chorus::detail
