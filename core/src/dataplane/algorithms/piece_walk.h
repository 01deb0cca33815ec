#pragma once
// Two ways through the pieces of a fused allreduce (the tensors of a call,
// concatenated in the response's order): spans of an element range, and a
// cursor that walks one rank's pieces element by element. Addresses are
// only computed here, never read: they may be another process's.

#include <algorithm>
#include <cstdint>
#include <vector>

#include "dataplane/reduce_piece.h"

namespace chorus::detail {

/// Element ranges of the concatenated pieces, as spans of single pieces.
class PieceSpans {
 public:
  PieceSpans(const std::vector<ReducePiece>& pieces, int64_t esize) : pieces_(pieces), esize_(esize) {
    starts_.reserve(pieces.size());
    int64_t at = 0;
    for (const auto& p : pieces) {
      starts_.push_back(at);
      at += p.count;
    }
    total_ = at;
  }
  int64_t total() const { return total_; }

  /// Calls f(input, output, done, take) for consecutive spans of elements
  /// [begin, begin + len): `input`/`output` point at the span in its piece,
  /// `done` elements of the range come before it.
  template <class F>
  void for_each(int64_t begin, int64_t len, F&& f) const {
    if (len <= 0) return;
    // The last piece starting at or before `begin` that is not empty.
    size_t i = static_cast<size_t>(std::upper_bound(starts_.begin(), starts_.end(), begin) - starts_.begin()) - 1;
    int64_t done = 0;
    while (done < len) {
      const ReducePiece& p = pieces_[i];
      const int64_t off = begin + done - starts_[i];
      const int64_t take = std::min(len - done, p.count - off);
      if (take > 0) {
        f(static_cast<const char*>(p.input) + off * esize_, static_cast<char*>(p.output) + off * esize_, done, take);
        done += take;
      }
      ++i;
    }
  }

 private:
  const std::vector<ReducePiece>& pieces_;
  const int64_t esize_;
  std::vector<int64_t> starts_;
  int64_t total_ = 0;
};

/// Walks one rank's pieces element by element, from element `begin` of
/// their concatenation; contiguous() is valid while elements are left.
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

}  // namespace chorus::detail
