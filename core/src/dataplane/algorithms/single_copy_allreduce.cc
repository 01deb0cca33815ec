#include "dataplane/algorithms/single_copy_allreduce.h"

#include <sys/prctl.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "dataplane/algorithms/piece_walk.h"
#include "kernels/reduce_kernels.h"
#include "kernels/streaming_copy.h"

namespace chorus::detail {

namespace {

// Remote segments handed to one system call (the kernel takes up to IOV_MAX).
constexpr int kIovecsPerCall = 64;

// Moves count elements between `local` (contiguous) and elements [begin,
// begin + count) of a peer's inputs (reading) or outputs (writing).
// Partial transfers go on where they stopped; a call that moves nothing
// is a failure (errno, or EFAULT when the kernel gave none).
int transfer(CrossMemoryCall call, bool outputs, int64_t pid, char* local, const std::vector<ReducePiece>& remote,
             int64_t begin, int64_t count, int64_t esize) {
  PieceCursor at(remote, begin);
  iovec iov[kIovecsPerCall];
  for (int64_t left = count; left > 0;) {
    int segments = 0;
    int64_t batch = 0;
    while (segments < kIovecsPerCall && batch < left) {
      const int64_t take = std::min(at.contiguous(), left - batch);
      char* where = outputs ? at.output(esize) : const_cast<char*>(at.input(esize));
      iov[segments++] = iovec{where, static_cast<size_t>(take * esize)};
      at.advance(take);
      batch += take;
    }
    iovec* first = iov;
    iovec mine{local, static_cast<size_t>(batch * esize)};
    while (mine.iov_len > 0) {
      errno = 0;
      const ssize_t got = call(static_cast<pid_t>(pid), &mine, 1, first, static_cast<unsigned long>(segments), 0);
      if (got <= 0) return errno != 0 ? errno : EFAULT;
      mine.iov_base = static_cast<char*>(mine.iov_base) + got;
      mine.iov_len -= static_cast<size_t>(got);
      for (size_t skip = static_cast<size_t>(got); skip > 0;) {  // drop what was moved of the remote segments
        const size_t step = std::min(skip, first->iov_len);
        first->iov_base = static_cast<char*>(first->iov_base) + step;
        first->iov_len -= step;
        skip -= step;
        if (first->iov_len == 0) {
          ++first;
          --segments;
        }
      }
    }
    local += batch * esize;
    left -= batch;
  }
  return 0;
}

// One chunk of this rank's part, as it goes: the peers' inputs read into
// the L2-sized scratch, reduced in rank order with this rank's own input
// into `acc`, scaled, then written out.
class ChunkReducer {
 public:
  ChunkReducer(const SingleCopyRanks& ranks, const CrossMemoryCalls& calls, DataType dtype, ReduceOp op,
               double prescale, char* acc, char* peer)
      : ranks_(ranks), calls_(calls), own_(ranks.pieces[static_cast<size_t>(ranks.me)], dtype_size(dtype)),
        dtype_(dtype), op_(op), prescale_(prescale), esize_(dtype_size(dtype)), acc_(acc), peer_(peer) {}

  // acc = x_0 op x_1 op ... in rank order, x_k = rank k's input * prescale.
  CrossMemoryFailure reduce(int64_t at, int64_t take) {
    const int n = static_cast<int>(ranks_.pieces.size());
    bool own_first = false;  // acc not yet filled: x_0 is this rank's unscaled input
    for (int k = 0; k < n; ++k) {
      if (k == ranks_.me) {
        if (k == 0 && prescale_ == 1.0) {
          own_first = true;
        } else {
          combine_own(at, take, k == 0);
        }
        continue;
      }
      char* into = k == 0 ? acc_ : peer_;
      const int error = transfer(calls_.read, false, ranks_.pids[static_cast<size_t>(k)], into,
                                 ranks_.pieces[static_cast<size_t>(k)], at, take, esize_);
      if (error != 0) return CrossMemoryFailure{error, k, false};
      if (prescale_ != 1.0) scale_copy(into, into, take, dtype_, prescale_, 1);
      if (k == 0) continue;
      if (own_first) {
        own_.for_each(at, take, [&](const char* in, char*, int64_t done, int64_t n_take) {
          reduce_to(acc_ + done * esize_, in, peer_ + done * esize_, n_take, dtype_, op_);
        });
        own_first = false;
      } else {
        reduce_to(acc_, acc_, peer_, take, dtype_, op_);
      }
    }
    return {};
  }

  // acc (scaled) into this rank's outputs and every peer's.
  CrossMemoryFailure write(int64_t at, int64_t take, bool streaming) {
    own_.for_each(at, take, [&](const char*, char* out, int64_t done, int64_t n_take) {
      const size_t bytes = static_cast<size_t>(n_take * esize_);
      if (streaming) {
        copy_streaming(out, acc_ + done * esize_, bytes);
      } else {
        std::memcpy(out, acc_ + done * esize_, bytes);
      }
    });
    const int n = static_cast<int>(ranks_.pieces.size());
    for (int i = 1; i < n; ++i) {
      const int k = (ranks_.me + i) % n;  // each rank starts with its next: no peer gets all writers at once
      const int error = transfer(calls_.write, true, ranks_.pids[static_cast<size_t>(k)], acc_,
                                 ranks_.pieces[static_cast<size_t>(k)], at, take, esize_);
      if (error != 0) return CrossMemoryFailure{error, k, true};
    }
    return {};
  }

 private:
  // This rank's input (prescaled on its way) into acc (first) or onto it.
  void combine_own(int64_t at, int64_t take, bool first) {
    own_.for_each(at, take, [&](const char* in, char*, int64_t done, int64_t n_take) {
      char* acc = acc_ + done * esize_;
      if (first) {
        scale_copy(acc, in, n_take, dtype_, prescale_, 1);
        return;
      }
      const char* x = in;
      if (prescale_ != 1.0) {
        scale_copy(peer_ + done * esize_, in, n_take, dtype_, prescale_, 1);
        x = peer_ + done * esize_;
      }
      reduce_to(acc, acc, x, n_take, dtype_, op_);
    });
  }

  const SingleCopyRanks& ranks_;
  const CrossMemoryCalls& calls_;
  const PieceSpans own_;
  const DataType dtype_;
  const ReduceOp op_;
  const double prescale_;
  const int64_t esize_;
  char* const acc_;
  char* const peer_;
};

}  // namespace

void allow_cross_memory_from_peers() {
  std::ifstream scope("/proc/sys/kernel/yama/ptrace_scope");
  int value = -1;
  if (scope >> value && value == 1) prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
}

CrossMemoryFailure probe_cross_memory(const CrossMemoryCalls& calls, int peer, int64_t pid, uint64_t address) {
  uint64_t word = 0;
  iovec mine{&word, sizeof(word)};
  iovec theirs{reinterpret_cast<void*>(address), sizeof(word)};
  errno = 0;
  if (calls.read(static_cast<pid_t>(pid), &mine, 1, &theirs, 1, 0) != sizeof(word)) {
    return CrossMemoryFailure{errno != 0 ? errno : EFAULT, peer, false};
  }
  if (word != probe_word_of(peer)) return CrossMemoryFailure{ESRCH, peer, false};  // not the peer's memory
  errno = 0;
  if (calls.write(static_cast<pid_t>(pid), &mine, 1, &theirs, 1, 0) != sizeof(word)) {
    return CrossMemoryFailure{errno != 0 ? errno : EFAULT, peer, true};
  }
  return {};
}

CrossMemoryFailure single_copy_reduce_part(const SingleCopyRanks& ranks, const CrossMemoryCalls& calls,
                                           int64_t begin, int64_t length, DataType dtype, ReduceOp op,
                                           double prescale, PostScale scale, bool streaming,
                                           std::vector<char>* scratch) {
  const int64_t esize = dtype_size(dtype);
  const int64_t chunk = std::max<int64_t>(1, kSingleCopyChunkBytes / esize);
  if (scratch->size() < static_cast<size_t>(2 * chunk * esize)) scratch->resize(static_cast<size_t>(2 * chunk * esize));
  ChunkReducer reducer(ranks, calls, dtype, op, prescale, scratch->data(), scratch->data() + chunk * esize);
  CrossMemoryFailure failure;
  for (int64_t done = 0; done < length && failure.ok(); done += chunk) {
    const int64_t take = std::min(chunk, length - done);
    failure = reducer.reduce(begin + done, take);
    if (!failure.ok()) break;
    if (!scale.is_identity()) scale_copy(scratch->data(), scratch->data(), take, dtype, scale.factor, scale.divisor);
    failure = reducer.write(begin + done, take, streaming);
  }
  if (streaming) streaming_stores_done();  // before the barrier that lets this rank's caller go on
  return failure;
}

}  // namespace chorus::detail
