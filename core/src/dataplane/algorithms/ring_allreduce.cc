#include "dataplane/algorithms/ring_allreduce.h"

#include <algorithm>
#include <vector>

#include "kernels/reduce_kernels.h"

namespace chorus::detail {

int64_t ring_scratch_bytes(int64_t count, DataType dtype, int ranks) {
  if (ranks <= 1) return 0;
  return 2 * even_chunk(count, ranks, 0).length * dtype_size(dtype);  // double-buffered largest chunk
}

namespace {

// One call's state. Step g (0 <= g < 2(n-1)) sends chunk (rank - g) and
// receives chunk (rank - g - 1), mod n: steps 0..n-2 reduce-scatter (receive
// into scratch, output = input op scratch), steps n-1.. allgather (receive
// straight into the output). The chunk received at step g is the one sent at
// step g + 1, segment by segment, which is what makes the pipeline. Each
// chunk is reduced by a rank at most once, so reductions always read the
// input; step 0 sends from the input, later steps from the output.
class Ring {
 public:
  Ring(PeerLink& link, const char* input, char* output, int64_t count, DataType dtype, ReduceOp op, char* scratch,
       const RingOptions& options)
      : link_(link),
        n_(link.size()),
        rank_(link.rank()),
        input_(input),
        buffer_(output),
        count_(count),
        dtype_(dtype),
        op_(op),
        esize_(dtype_size(dtype)),
        scratch_(scratch),
        scratch_half_(even_chunk(count, n_, 0).length * esize_),
        segment_elems_(std::max<int64_t>(1, options.segment_bytes / esize_)),
        tag_base_(options.tag_base),
        scale_factor_(options.scale_factor),
        scale_divisor_(options.scale_divisor),
        first_(options.halves == RingHalves::kAllgather ? n_ - 1 : 0),
        end_(options.halves == RingHalves::kReduceScatter ? n_ - 1 : steps()),
        sends_(static_cast<size_t>(steps())),
        recvs_(static_cast<size_t>(steps())),
        sends_waited_(static_cast<size_t>(steps()), 0) {}

  Status run() {
    // The first step's receives before its sends (n >= 2): step 0 reduces
    // into scratch; an allgather alone starts with receives into the output.
    Status s = reducing(first_) ? post_recvs(first_) : post_allgather_recvs(first_, segments(chunk_received(first_)));
    if (s.is_ok()) s = post_sends_of_chunk(first_, chunk_sent(first_));
    for (int g = first_; s.is_ok() && g < end_; ++g) s = step(g);
    for (int g = first_; s.is_ok() && g < end_; ++g) s = wait_sends(g);
    return s;
  }

 private:
  int steps() const { return 2 * (n_ - 1); }
  int mod(int v) const { return ((v % n_) + n_) % n_; }
  int chunk_sent(int g) const { return mod(rank_ - g); }
  int chunk_received(int g) const { return mod(rank_ - g - 1); }
  int right() const { return mod(rank_ + 1); }
  int left() const { return mod(rank_ - 1); }
  bool reducing(int g) const { return g < n_ - 1; }
  int64_t segments(int chunk) const {
    return (even_chunk(count_, n_, chunk).length + segment_elems_ - 1) / segment_elems_;
  }
  // Element range [first, first + len) of segment `j` of `chunk`.
  void segment(int chunk, int64_t j, int64_t* first, int64_t* len) const {
    const ChunkRange c = even_chunk(count_, n_, chunk);
    *first = c.offset + j * segment_elems_;
    *len = std::min(segment_elems_, c.offset + c.length - *first);
  }
  // Where step g's segment j lands: scratch (reduce-scatter) or the buffer.
  char* landing(int g, int64_t j) {
    int64_t first, len;
    segment(chunk_received(g), j, &first, &len);
    if (!reducing(g)) return buffer_ + first * esize_;
    const int64_t within = first - even_chunk(count_, n_, chunk_received(g)).offset;
    return scratch_ + (g % 2) * scratch_half_ + within * esize_;
  }

  // Reduce-scatter receives (into scratch) of step g, all segments.
  Status post_recvs(int g) {
    const int chunk = chunk_received(g);
    for (int64_t j = 0; j < segments(chunk); ++j) {
      Status s = post_recv(g, j);
      if (!s.is_ok()) return s;
    }
    return Status::ok();
  }

  Status post_recv(int g, int64_t j) {
    int64_t first, len;
    segment(chunk_received(g), j, &first, &len);
    PeerLink::Request r;
    Status s = link_.irecv(left(), tag_base_ + g, landing(g, j), len * esize_, &r);
    if (s.is_ok()) recvs_[static_cast<size_t>(g)].push_back(r);
    return s;
  }

  // Allgather receives of step g up to segment `upto` (exclusive), posted
  // while the step before still runs, so the left neighbour's forwards land
  // in place and not in the transport's buffers. Each lands in a segment
  // this rank sent at step g - (n - 1): from the buffer (or in place), that
  // send must be finished first; from a separate input, nothing reads it.
  Status post_allgather_recvs(int g, int64_t upto) {
    const int64_t all = segments(chunk_received(g));
    const int sent_at = g - (n_ - 1);
    const bool conflict = sent_at > 0 || input_ == buffer_;
    if (!conflict) upto = all;
    for (int64_t j = static_cast<int64_t>(recvs_[static_cast<size_t>(g)].size()); j < std::min(upto, all); ++j) {
      Status s = conflict ? wait_send(sent_at, j) : Status::ok();
      if (s.is_ok()) s = post_recv(g, j);
      if (!s.is_ok()) return s;
    }
    return Status::ok();
  }

  Status post_send(int g, int chunk, int64_t j) {
    int64_t first, len;
    segment(chunk, j, &first, &len);
    const char* from = (g == 0 ? input_ : buffer_) + first * esize_;
    PeerLink::Request r;
    Status s = link_.isend(right(), tag_base_ + g, from, len * esize_, &r);
    if (s.is_ok()) sends_[static_cast<size_t>(g)].push_back(r);
    return s;
  }

  Status post_sends_of_chunk(int g, int chunk) {
    for (int64_t j = 0; j < segments(chunk); ++j) {
      Status s = post_send(g, chunk, j);
      if (!s.is_ok()) return s;
    }
    return Status::ok();
  }

  // Waits for step g's sends up to segment j (they finish in order).
  Status wait_send(int g, int64_t j) {
    auto& done = sends_waited_[static_cast<size_t>(g)];
    const auto& sends = sends_[static_cast<size_t>(g)];
    for (; done <= j && done < static_cast<int64_t>(sends.size()); ++done) {
      Status s = link_.wait(sends[static_cast<size_t>(done)]);
      if (!s.is_ok()) return s;
    }
    return Status::ok();
  }

  Status wait_sends(int g) {
    if (g < 0) return Status::ok();
    return wait_send(g, static_cast<int64_t>(sends_[static_cast<size_t>(g)].size()) - 1);
  }

  Status step(int g) {
    // Reduce-scatter receives land in scratch, so they are posted one step
    // early (double-buffered) and the left neighbour never waits for us.
    // Allgather receives land in the buffer: posted segment by segment
    // during the step before (post_allgather_recvs), the rest now.
    const bool next_gathers = g + 1 < end_ && !reducing(g + 1);
    Status s = reducing(g) ? Status::ok() : post_allgather_recvs(g, segments(chunk_received(g)));
    if (s.is_ok() && g + 1 < end_ && reducing(g + 1)) s = post_recvs(g + 1);
    if (!s.is_ok()) return s;
    const int chunk = chunk_received(g);
    const auto& recvs = recvs_[static_cast<size_t>(g)];
    for (int64_t j = 0; j < static_cast<int64_t>(recvs.size()); ++j) {
      s = link_.wait(recvs[static_cast<size_t>(j)]);
      if (!s.is_ok()) return s;
      if (reducing(g)) {
        int64_t first, len;
        segment(chunk, j, &first, &len);
        char* out = buffer_ + first * esize_;
        reduce_to(out, input_ + first * esize_, landing(g, j), len, dtype_, op_);
        // After the last reduction this chunk is final: scale it while hot.
        if (g == n_ - 2 && (scale_factor_ != 1.0 || scale_divisor_ != 1)) {
          scale_copy(out, out, len, dtype_, scale_factor_, scale_divisor_);
        }
      }
      if (g + 1 < end_) s = post_send(g + 1, chunk, j);  // forward what is final for this step
      if (s.is_ok() && next_gathers) s = post_allgather_recvs(g + 1, j + 1);
      if (!s.is_ok()) return s;
    }
    recvs_[static_cast<size_t>(g)].clear();
    return Status::ok();
  }

  PeerLink& link_;
  const int n_, rank_;
  const char* input_;
  char* buffer_;  // the output
  const int64_t count_;
  const DataType dtype_;
  const ReduceOp op_;
  const int64_t esize_;
  char* scratch_;
  const int64_t scratch_half_;
  const int64_t segment_elems_;
  const int tag_base_;
  const double scale_factor_;
  const int64_t scale_divisor_;
  const int first_, end_;  // the steps that run: [first_, end_)
  std::vector<std::vector<PeerLink::Request>> sends_, recvs_;
  std::vector<int64_t> sends_waited_;  // per step: how many of its sends were waited for, in order
};

}  // namespace

Status ring_allreduce(PeerLink& link, const void* input, void* output, int64_t count, DataType dtype, ReduceOp op,
                      void* scratch, const RingOptions& options) {
  if (count <= 0) return Status::ok();
  if (options.segment_bytes <= 0) return Status::invalid_argument("ring segment size must be positive");
  if (link.size() <= 1) {
    scale_copy(output, input, count, dtype, options.scale_factor, options.scale_divisor);
    return Status::ok();
  }
  return Ring(link, static_cast<const char*>(input), static_cast<char*>(output), count, dtype, op,
              static_cast<char*>(scratch), options)
      .run();
}

}  // namespace chorus::detail
