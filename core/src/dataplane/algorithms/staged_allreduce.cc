#include "dataplane/algorithms/staged_allreduce.h"

#include <algorithm>
#include <string>

#include "dataplane/algorithms/ring_allreduce.h"
#include "dataplane/algorithms/zero_copy_allreduce.h"
#include "kernels/reduce_kernels.h"
#include "kernels/streaming_copy.h"

namespace chorus::detail {

StagedCall::StagedCall(const SharedSlots& slots, const std::vector<ReducePiece>& pieces, DataType dtype,
                       ReduceOp op, double prescale, PostScale scale, int64_t first_block,
                       std::vector<char>* scratch, std::vector<char>* prescaled)
    : slots_(slots), spans_(pieces, dtype_size(dtype)), dtype_(dtype), op_(op), prescale_(prescale), scale_(scale),
      esize_(dtype_size(dtype)), first_block_(first_block), scratch_(*scratch), prescaled_(*prescaled) {
  // Parts start on their own cache lines where the block allows it.
  const int64_t per_line = std::max<int64_t>(1, 64 / esize_);
  stride_ = slots_.block_bytes / esize_ / slots_.size;
  if (stride_ >= per_line) stride_ -= stride_ % per_line;
  if (stride_ <= 0) return;
  block_elems_ = stride_ * slots_.size;
  blocks_ = (count() + block_elems_ - 1) / block_elems_;
  // Results land in the outputs with streaming stores on large calls (as on
  // the zero-copy path): nobody reads them back soon, and skipping the read
  // for ownership of the output lines is a third less memory traffic. The
  // staging keeps ordinary stores: the other ranks read it next phase.
  streaming_ = count() * esize_ >= kZeroCopyStreamingBytes;
  step_ = std::max<int64_t>(1, kZeroCopyStepBytes / esize_);
  if (streaming_ && !scale_.is_identity() && scratch_.size() < static_cast<size_t>(step_ * esize_)) {
    scratch_.resize(static_cast<size_t>(step_ * esize_));
  }
}

Status StagedCall::check() const {
  if (stride_ > 0) return Status::ok();
  return Status::invalid_argument("shared-memory staging blocks of " + std::to_string(slots_.block_bytes) +
                                  " bytes cannot hold one " + dtype_name(dtype_) + " element per rank (" +
                                  std::to_string(slots_.size) + " ranks)");
}

char* StagedCall::block(int rank, int64_t b) const {
  return slots_.staging[static_cast<size_t>(rank)] + ((first_block_ + b) % 2) * slots_.block_bytes;
}

int64_t StagedCall::length_of(int64_t b) const { return std::min(block_elems_, count() - b * block_elems_); }

void StagedCall::write_out(char* out, const char* result, int64_t take) {
  if (!streaming_) {
    scale_copy(out, result, take, dtype_, scale_.factor, scale_.divisor);
    return;
  }
  if (scale_.is_identity()) {
    copy_streaming(out, result, static_cast<size_t>(take * esize_));
    return;
  }
  for (int64_t done = 0; done < take; done += step_) {  // scaled in L1, then streamed out
    const int64_t n_step = std::min(step_, take - done);
    scale_copy(scratch_.data(), result + done * esize_, n_step, dtype_, scale_.factor, scale_.divisor);
    copy_streaming(out + done * esize_, scratch_.data(), static_cast<size_t>(n_step * esize_));
  }
}

void StagedCall::copy_in(int64_t b) {
  char* mine = block(slots_.rank, b);
  for (int k = 0; k < slots_.size; ++k) {
    if (k == slots_.rank) continue;
    const ChunkRange part = even_chunk(length_of(b), slots_.size, k);
    spans_.for_each(first_of(b) + part.offset, part.length, [&](const char* in, char*, int64_t done, int64_t take) {
      scale_copy(mine + (k * stride_ + done) * esize_, in, take, dtype_, prescale_, 1);
    });
  }
}

void StagedCall::reduce(int64_t b) {
  const int me = slots_.rank, n = slots_.size;
  char* mine = block(me, b);
  const ChunkRange own = even_chunk(length_of(b), n, me);
  spans_.for_each(first_of(b) + own.offset, own.length, [&](const char* in, char* out, int64_t done, int64_t take) {
    const int64_t at = (me * stride_ + done) * esize_;
    const char* own_input = in;
    if (prescale_ != 1.0) {
      if (prescaled_.size() < static_cast<size_t>(take * esize_)) prescaled_.resize(static_cast<size_t>(take * esize_));
      scale_copy(prescaled_.data(), in, take, dtype_, prescale_, 1);
      own_input = prescaled_.data();
    }
    auto input_of = [&](int k) -> const char* { return k == me ? own_input : block(k, b) + at; };
    char* acc = mine + at;
    reduce_to(acc, input_of(0), input_of(1), take, dtype_, op_);
    for (int k = 2; k < n; ++k) reduce_to(acc, acc, input_of(k), take, dtype_, op_);
    write_out(out, acc, take);
  });
}

void StagedCall::copy_out(int64_t b) {
  for (int k = 0; k < slots_.size; ++k) {
    if (k == slots_.rank) continue;
    const ChunkRange part = even_chunk(length_of(b), slots_.size, k);
    const char* theirs = block(k, b);
    spans_.for_each(first_of(b) + part.offset, part.length, [&](const char*, char* out, int64_t done, int64_t take) {
      write_out(out, theirs + (k * stride_ + done) * esize_, take);
    });
  }
}

}  // namespace chorus::detail
