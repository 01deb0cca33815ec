#include "dataplane/algorithms/zero_copy_allreduce.h"

#include <algorithm>
#include <cstring>

#include "dataplane/algorithms/piece_walk.h"
#include "kernels/reduce_kernels.h"
#include "kernels/streaming_copy.h"

namespace chorus::detail {

void reduce_part_into_all(const std::vector<std::vector<ReducePiece>>& ranks, int64_t begin, int64_t length,
                          DataType dtype, ReduceOp op, double prescale, PostScale scale, bool streaming,
                          std::vector<char>* scratch) {
  const int64_t esize = dtype_size(dtype);
  const int64_t step = std::max<int64_t>(1, kZeroCopyStepBytes / esize);
  if (scratch->size() < static_cast<size_t>(2 * step * esize)) scratch->resize(static_cast<size_t>(2 * step * esize));
  char* acc = scratch->data();
  char* scaled = acc + step * esize;  // another rank's prescaled input
  std::vector<PieceCursor> at;
  at.reserve(ranks.size());
  for (const auto& pieces : ranks) at.emplace_back(pieces, begin);
  std::vector<char*> outputs(ranks.size());
  for (int64_t done = 0; done < length;) {
    int64_t take = std::min(step, length - done);
    for (const PieceCursor& c : at) take = std::min(take, c.contiguous());
    // acc = op over ranks, in rank order (every rank reduces in this order).
    for (size_t k = 0; k < at.size(); ++k) {
      const char* in = at[k].input(esize);
      if (prescale != 1.0) {
        char* to = k == 0 ? acc : scaled;
        scale_copy(to, in, take, dtype, prescale, 1);
        in = to;
      }
      if (k == 1) {
        reduce_to(acc, prescale != 1.0 ? acc : at[0].input(esize), in, take, dtype, op);
      } else if (k > 1) {
        reduce_to(acc, acc, in, take, dtype, op);
      }
      outputs[k] = at[k].output(esize);
    }
    if (!scale.is_identity()) scale_copy(acc, acc, take, dtype, scale.factor, scale.divisor);
    for (char* out : outputs) {
      if (streaming) {
        copy_streaming(out, acc, static_cast<size_t>(take * esize));
      } else {
        std::memcpy(out, acc, static_cast<size_t>(take * esize));
      }
    }
    for (PieceCursor& c : at) c.advance(take);
    done += take;
  }
  if (streaming) streaming_stores_done();  // before the barrier that lets the others read
}

}  // namespace chorus::detail
