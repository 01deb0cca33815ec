#include "dataplane/algorithms/adasum_allreduce.h"

#include <algorithm>
#include <cfloat>
#include <cmath>

namespace chorus::detail {

namespace {

constexpr int64_t kMaxMessageBytes = int64_t{1} << 30;  // MPI counts are ints: long messages go in parts
// Tag offsets from tag_base: one per level and phase.
constexpr int kFoldTag = 0, kHalvingTag = 8, kGatherTag = 80, kSumsTag = 160;

// Dot product and squared norms of one tensor's part, in double.
struct Sums {
  double dot = 0, aa = 0, bb = 0;
};

// Starts a send or receive of `bytes` (>= 0) in parts; every request goes to `out`.
Status post(PeerLink& link, bool send, int peer, int tag, void* data, int64_t bytes,
            std::vector<PeerLink::Request>* out) {
  char* p = static_cast<char*>(data);
  int64_t done = 0;
  do {
    const int64_t part = std::min(kMaxMessageBytes, bytes - done);
    PeerLink::Request r = 0;
    Status s = send ? link.isend(peer, tag, p + done, part, &r) : link.irecv(peer, tag, p + done, part, &r);
    if (!s.is_ok()) return s;
    out->push_back(r);
    done += part;
  } while (done < bytes);
  return Status::ok();
}

// Sends and receives at once (either side skipped when its byte count is
// negative), then waits for both.
Status exchange(PeerLink& link, int peer, int tag, const void* send, int64_t send_bytes, void* recv,
                int64_t recv_bytes) {
  std::vector<PeerLink::Request> requests;
  Status s = Status::ok();
  if (recv_bytes >= 0) s = post(link, false, peer, tag, recv, recv_bytes, &requests);
  if (s.is_ok() && send_bytes >= 0) s = post(link, true, peer, tag, const_cast<void*>(send), send_bytes, &requests);
  for (PeerLink::Request r : requests) {
    Status w = link.wait(r);
    if (s.is_ok()) s = w;
  }
  return s;
}

double coefficient(double dot, double own_norm_sq) {
  return own_norm_sq >= std::sqrt(DBL_MIN) ? 1.0 - dot / own_norm_sq * 0.5 : 1.0;
}

// Per tensor, the sums of its elements inside [first, first + len) of the
// buffer; a and b point at element `first`.
template <class T>
std::vector<Sums> partial_sums(const T* a, const T* b, int64_t first, int64_t len, const std::vector<int64_t>& counts) {
  std::vector<Sums> sums(counts.size());
  int64_t start = 0;
  for (size_t t = 0; t < counts.size(); start += counts[t], ++t) {
    const int64_t lo = std::max(start, first), hi = std::min(start + counts[t], first + len);
    Sums& s = sums[t];
    for (int64_t i = lo; i < hi; ++i) {
      const double x = a[i - first], y = b[i - first];
      s.dot += x * y;
      s.aa += x * x;
      s.bb += y * y;
    }
  }
  return sums;
}

// out = acoeff a + bcoeff b over [first, first + len), each tensor with its own coefficients.
template <class T>
void combine_range(T* out, const T* a, const T* b, int64_t first, int64_t len, const std::vector<int64_t>& counts,
                   const std::vector<Sums>& sums) {
  int64_t start = 0;
  for (size_t t = 0; t < counts.size(); start += counts[t], ++t) {
    const int64_t lo = std::max(start, first), hi = std::min(start + counts[t], first + len);
    const double ca = coefficient(sums[t].dot, sums[t].aa), cb = coefficient(sums[t].dot, sums[t].bb);
    for (int64_t i = lo; i < hi; ++i) out[i - first] = static_cast<T>(ca * a[i - first] + cb * b[i - first]);
  }
}

// One call's state on one rank (see the header for the tree).
template <class T>
class Adasum {
 public:
  Adasum(PeerLink& link, T* buffer, const std::vector<int64_t>& counts, T* scratch, int tag_base)
      : link_(link), n_(link.size()), rank_(link.rank()), buf_(buffer), counts_(counts), scratch_(scratch),
        tag_base_(tag_base) {
    for (int64_t c : counts) count_ += c;
    while (p_ * 2 <= n_) p_ *= 2;
  }

  Status run() {
    const int extras = n_ - p_;
    if (rank_ >= p_) {  // folded into rank - p: hand the vector over, take the result back
      Status s = send_all(rank_ - p_, kFoldTag);
      return s.is_ok() ? receive_all(rank_ - p_, kFoldTag + 1) : s;
    }
    if (rank_ < extras) {
      Status s = receive_into_scratch(rank_ + p_, kFoldTag, count_);
      if (!s.is_ok()) return s;
      const std::vector<Sums> sums = partial_sums(buf_, scratch_, 0, count_, counts_);
      combine_range(buf_, buf_, scratch_, 0, count_, counts_, sums);
    }
    Status s = halve_and_combine();
    if (s.is_ok()) s = gather_back();
    if (s.is_ok() && rank_ < extras) s = send_all(rank_ + p_, kFoldTag + 1);
    return s;
  }

 private:
  struct Segment {
    int64_t first = 0, len = 0;
  };

  Status send_all(int peer, int tag) {
    return exchange(link_, peer, tag_base_ + tag, buf_, count_ * static_cast<int64_t>(sizeof(T)), nullptr, -1);
  }
  Status receive_all(int peer, int tag) {
    return exchange(link_, peer, tag_base_ + tag, nullptr, -1, buf_, count_ * static_cast<int64_t>(sizeof(T)));
  }
  Status receive_into_scratch(int peer, int tag, int64_t elems) {
    return exchange(link_, peer, tag_base_ + tag, nullptr, -1, scratch_, elems * static_cast<int64_t>(sizeof(T)));
  }

  // The lower half of `seg` stays with the rank whose bit L is clear.
  static void split(const Segment& seg, bool lower, Segment* keep, Segment* give) {
    const Segment first{seg.first, seg.len / 2}, second{seg.first + seg.len / 2, seg.len - seg.len / 2};
    *keep = lower ? first : second;
    *give = lower ? second : first;
  }

  Status halve_and_combine() {
    Segment seg{0, count_};
    int level = 0;
    for (int L = 1; L < p_; L *= 2, ++level) {
      const int peer = rank_ ^ L;
      const bool lower = (rank_ & L) == 0;
      Segment keep, give;
      split(seg, lower, &keep, &give);
      Status s = exchange(link_, peer, tag_base_ + kHalvingTag + level, buf_ + give.first,
                          give.len * static_cast<int64_t>(sizeof(T)), scratch_,
                          keep.len * static_cast<int64_t>(sizeof(T)));
      if (!s.is_ok()) return s;
      T* mine = buf_ + keep.first;
      const T* a = lower ? mine : scratch_;  // a: the lower block's vector
      const T* b = lower ? scratch_ : mine;
      std::vector<Sums> sums = partial_sums(a, b, keep.first, keep.len, counts_);
      s = sum_over_block(L, level, &sums);
      if (!s.is_ok()) return s;
      combine_range(mine, a, b, keep.first, keep.len, counts_, sums);
      seg = keep;
      segments_.push_back(give);
    }
    return Status::ok();
  }

  // Recursive doubling over the 2L ranks of this rank's block; each step
  // adds the lower rank's sums first, so every rank ends with the same bits.
  Status sum_over_block(int L, int level, std::vector<Sums>* sums) {
    std::vector<Sums> theirs(sums->size());
    const int64_t bytes = static_cast<int64_t>(sums->size() * sizeof(Sums));
    int step = 0;
    for (int bit = 1; bit <= L; bit *= 2, ++step) {
      const int peer = rank_ ^ bit;
      Status s = exchange(link_, peer, tag_base_ + kSumsTag + level * 16 + step, sums->data(), bytes, theirs.data(),
                          bytes);
      if (!s.is_ok()) return s;
      const bool lower = (rank_ & bit) == 0;
      for (size_t t = 0; t < sums->size(); ++t) {
        const Sums& lo = lower ? (*sums)[t] : theirs[t];
        const Sums& hi = lower ? theirs[t] : (*sums)[t];
        (*sums)[t] = Sums{lo.dot + hi.dot, lo.aa + hi.aa, lo.bb + hi.bb};
      }
    }
    return Status::ok();
  }

  // Distance halving: the segment given away at each level comes back from
  // the same peer, finished, while this rank's finished part goes to it.
  Status gather_back() {
    int level = static_cast<int>(segments_.size()) - 1;
    for (int L = p_ / 2; L >= 1; L /= 2, --level) {
      const Segment& missing = segments_[static_cast<size_t>(level)];
      const Segment mine = own_at(level);
      Status s = exchange(link_, rank_ ^ L, tag_base_ + kGatherTag + level, buf_ + mine.first,
                          mine.len * static_cast<int64_t>(sizeof(T)), buf_ + missing.first,
                          missing.len * static_cast<int64_t>(sizeof(T)));
      if (!s.is_ok()) return s;
    }
    return Status::ok();
  }

  // What this rank holds finished before gather step `level`: the segment
  // it kept at that level (everything below it already came back).
  Segment own_at(int level) const {
    Segment seg{0, count_};
    int L = 1;
    for (int l = 0; l <= level; ++l, L *= 2) {
      Segment keep, give;
      split(seg, (rank_ & L) == 0, &keep, &give);
      seg = keep;
    }
    return seg;
  }

  PeerLink& link_;
  const int n_, rank_;
  T* buf_;
  const std::vector<int64_t>& counts_;
  T* scratch_;
  const int tag_base_;
  int64_t count_ = 0;
  int p_ = 1;
  std::vector<Segment> segments_;  // given away at each level of the halving
};

}  // namespace

int64_t adasum_scratch_bytes(int64_t count, DataType dtype) { return std::max<int64_t>(count, 1) * dtype_size(dtype); }

Status adasum_allreduce(PeerLink& link, void* buffer, const std::vector<int64_t>& tensor_counts, DataType dtype,
                        void* scratch, int tag_base) {
  if (link.size() <= 1) return Status::ok();
  if (dtype == DataType::kFloat32) {
    return Adasum<float>(link, static_cast<float*>(buffer), tensor_counts, static_cast<float*>(scratch), tag_base)
        .run();
  }
  if (dtype == DataType::kFloat64) {
    return Adasum<double>(link, static_cast<double*>(buffer), tensor_counts, static_cast<double*>(scratch), tag_base)
        .run();
  }
  return Status::internal(std::string("adasum_allreduce reached with ") + dtype_name(dtype) +
                          " (the data plane converts half types to float32)");
}

void adasum_combine(void* a, const void* b, const std::vector<int64_t>& tensor_counts, DataType dtype) {
  int64_t count = 0;
  for (int64_t c : tensor_counts) count += c;
  if (dtype == DataType::kFloat64) {
    auto* x = static_cast<double*>(a);
    const auto* y = static_cast<const double*>(b);
    combine_range(x, x, y, 0, count, tensor_counts, partial_sums(x, y, 0, count, tensor_counts));
  } else {
    auto* x = static_cast<float*>(a);
    const auto* y = static_cast<const float*>(b);
    combine_range(x, x, y, 0, count, tensor_counts, partial_sums(x, y, 0, count, tensor_counts));
  }
}

}  // namespace chorus::detail
