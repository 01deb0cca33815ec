// DataPlane::adasum: the arithmetic around the Adasum tree. The tree works
// on float32 or float64 in one buffer; the pieces of the response are its
// tensors (each gets its own dot products, as Horovod does within a fused
// buffer). float16 and bfloat16 are widened to float32 here, in the core,
// so the C ABI and the LibTorch adapter's fp16 compression get the same
// arithmetic: the tree in float32, rounded to the half type once at the end.
#include <cstring>

#include "common/half.h"
#include "dataplane/algorithms/adasum_allreduce.h"
#include "dataplane/data_plane.h"
#include "kernels/reduce_kernels.h"

namespace chorus::detail {

namespace {

bool is_half(DataType dtype) { return dtype == DataType::kFloat16 || dtype == DataType::kBFloat16; }

void widen(float* dst, const void* src, int64_t count, DataType dtype, double factor) {
  const auto* h = static_cast<const uint16_t*>(src);
  const float f = static_cast<float>(factor);
  for (int64_t i = 0; i < count; ++i) {
    dst[i] = (dtype == DataType::kFloat16 ? fp16_to_float(h[i]) : bf16_to_float(h[i])) * f;
  }
}

void narrow(void* dst, const float* src, int64_t count, DataType dtype, double factor) {
  auto* h = static_cast<uint16_t*>(dst);
  const float f = static_cast<float>(factor);
  for (int64_t i = 0; i < count; ++i) {
    h[i] = dtype == DataType::kFloat16 ? float_to_fp16(src[i] * f) : float_to_bf16(src[i] * f);
  }
}

}  // namespace

Status DataPlane::adasum(const FusedAllreduce& op, int64_t total, AllreduceOutcome* out) {
  const DataType work = is_half(op.dtype) ? DataType::kFloat32 : op.dtype;
  const int64_t wsize = dtype_size(work);
  char* packed = static_cast<char*>(fusion_.reserve(total * wsize));
  std::vector<int64_t> counts;
  counts.reserve(op.pieces.size());
  int64_t offset = 0;
  for (const ReducePiece& p : op.pieces) {
    char* at = packed + offset * wsize;
    if (is_half(op.dtype)) {
      widen(reinterpret_cast<float*>(at), p.input, p.count, op.dtype, op.prescale);
    } else {
      scale_copy(at, p.input, p.count, work, op.prescale, 1);
    }
    counts.push_back(p.count);
    offset += p.count;
  }
  out->packed = AllreduceOutcome::Clock::now();
  void* scratch = ring_scratch_.reserve(adasum_scratch_bytes(total, work));
  Status s = adasum_allreduce(link_, packed, counts, work, scratch);
  out->reduced = AllreduceOutcome::Clock::now();
  if (!s.is_ok()) return s;
  offset = 0;
  for (const ReducePiece& p : op.pieces) {
    const char* at = packed + offset * wsize;
    if (is_half(op.dtype)) {
      narrow(p.output, reinterpret_cast<const float*>(at), p.count, op.dtype, op.postscale);
    } else {
      scale_copy(p.output, at, p.count, work, op.postscale, 1);
    }
    offset += p.count;
  }
  return s;
}

}  // namespace chorus::detail
