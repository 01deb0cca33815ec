#include "dataplane/algorithms/zero_copy_allreduce.h"

#include <algorithm>
#include <cstring>

#include "kernels/reduce_kernels.h"
#include "kernels/streaming_copy.h"

namespace chorus::detail {

namespace {

// The area's layout: a header, then one entry per piece.
struct AreaHeader {
  uint32_t in_arena;
  uint32_t pieces;
  int64_t total;  // elements over all pieces: checked against the reader's own
};
struct AreaEntry {
  int64_t input_offset, output_offset, count;
};
static_assert(sizeof(AreaHeader) == 16 && sizeof(AreaEntry) == 24, "kExchangeAreaBytes assumes these sizes");

bool lies_in(const void* p, int64_t bytes, const char* arena, int64_t arena_bytes) {
  const char* c = static_cast<const char*>(p);
  return c >= arena && c - arena <= arena_bytes - bytes;
}

// Walks one rank's pieces element by element.
class PieceCursor {
 public:
  PieceCursor(const std::vector<ReducePiece>& pieces, int64_t begin) : pieces_(pieces) {
    while (i_ < pieces_.size() && begin >= pieces_[i_].count) begin -= pieces_[i_++].count;
    at_ = begin;
    skip_empty();
  }
  int64_t contiguous() const { return pieces_[i_].count - at_; }
  const char* input(int64_t esize) const { return static_cast<const char*>(pieces_[i_].input) + at_ * esize; }
  char* output(int64_t esize) const { return static_cast<char*>(pieces_[i_].output) + at_ * esize; }
  void advance(int64_t n) {
    at_ += n;
    skip_empty();
  }

 private:
  void skip_empty() {
    while (i_ < pieces_.size() && at_ >= pieces_[i_].count) {
      ++i_;
      at_ = 0;
    }
  }
  const std::vector<ReducePiece>& pieces_;
  size_t i_ = 0;
  int64_t at_ = 0;
};

}  // namespace

bool publish_arena_pieces(char* area, const std::vector<ReducePiece>& pieces, const char* arena,
                          int64_t arena_bytes, int64_t element_size) {
  auto* header = reinterpret_cast<AreaHeader*>(area);
  auto* entries = reinterpret_cast<AreaEntry*>(area + sizeof(AreaHeader));
  bool all_in = arena != nullptr;
  uint32_t published = 0;
  int64_t total = 0;
  for (size_t i = 0; all_in && i < pieces.size(); ++i) {
    const ReducePiece& p = pieces[i];
    if (p.count == 0) continue;  // empty tensors (perhaps with no data at all) take no part
    const int64_t bytes = p.count * element_size;
    all_in = published < kZeroCopyMaxPieces && lies_in(p.input, bytes, arena, arena_bytes) &&
             lies_in(p.output, bytes, arena, arena_bytes);
    if (all_in) {
      entries[published++] = AreaEntry{static_cast<const char*>(p.input) - arena,
                                       static_cast<const char*>(p.output) - arena, p.count};
      total += p.count;
    }
  }
  header->pieces = all_in ? published : 0;
  header->total = all_in ? total : -1;
  header->in_arena = all_in ? 1 : 0;
  return all_in;
}

bool published_in_arena(const char* area) { return reinterpret_cast<const AreaHeader*>(area)->in_arena == 1; }

int64_t published_total(const char* area) { return reinterpret_cast<const AreaHeader*>(area)->total; }

void published_pieces(const char* area, char* arena, std::vector<ReducePiece>* out) {
  const auto* header = reinterpret_cast<const AreaHeader*>(area);
  const auto* entries = reinterpret_cast<const AreaEntry*>(area + sizeof(AreaHeader));
  out->resize(header->pieces);
  for (uint32_t i = 0; i < header->pieces; ++i) {
    (*out)[i] = ReducePiece{arena + entries[i].input_offset, arena + entries[i].output_offset, entries[i].count};
  }
}

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
