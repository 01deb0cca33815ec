#pragma once
// The single-copy path of the shared-memory allreduce, for tensors in
// ordinary process memory (not in the arenas): each rank reduces its 1/n
// part of the concatenation reading the other ranks' inputs straight from
// their memory with cross-memory reads (process_vm_readv, Linux CMA, as Open
// MPI's shared-memory transport does), a cache-sized chunk at a time, in
// rank order, and writes the result into its own outputs and, with
// process_vm_writev while the chunk is still in cache, into the others'.
// Each byte crosses the kernel once each way instead of being staged twice
// (copy in, copy out), and a rank touches only its own part of everyone's
// memory, so in place needs no extra ordering: a barrier before (every
// rank published where its tensors lie) and one after (nobody returns
// while others still read or write its memory).
//
// Cross-memory access needs ptrace permission over the peer (same user, no
// stricter Yama policy, no seccomp filter refusing the calls):
// probe_cross_memory tells, and the shared-memory allreduce agrees on it
// across ranks before the first single-copy call.

#include <sys/types.h>
#include <sys/uio.h>

#include <cstdint>
#include <vector>

#include "chorus/types.h"
#include "dataplane/reduce_piece.h"
#include "dataplane/algorithms/exchange_area.h"

namespace chorus::detail {

/// process_vm_readv / process_vm_writev, replaceable in tests (to fail).
using CrossMemoryCall = ssize_t (*)(pid_t, const iovec*, unsigned long, const iovec*, unsigned long, unsigned long);
struct CrossMemoryCalls {
  CrossMemoryCall read = ::process_vm_readv;
  CrossMemoryCall write = ::process_vm_writev;
};

/// Bytes of the chunk read from each peer before it is reduced: the running
/// result and one peer's chunk stay in L2 (2 x 256 KiB; measured in
/// docs/performance.md: larger chunks gain nothing, 64 KiB loses 15 %).
constexpr int64_t kSingleCopyChunkBytes = 256 << 10;

/// The word rank `rank` publishes for the others' probe: a value no other
/// memory is likely to hold at that address.
constexpr uint64_t probe_word_of(int rank) { return 0x43484f5255530000ull + static_cast<uint64_t>(rank); }

/// Reads the 8-byte word at `address` of process `pid` and writes it back
/// unchanged: ok() when this process may read and write that memory and the
/// word is `peer`'s probe word. A word that is not (ranks in separate pid
/// namespaces that share /dev/shm: the pid names another process) fails
/// with ESRCH before anything is written there.
CrossMemoryFailure probe_cross_memory(const CrossMemoryCalls& calls, int peer, int64_t pid, uint64_t address);

/// Under Yama's restricted ptrace (ptrace_scope 1) only a process's
/// ancestors may trace it, and ranks are siblings: lets any process of this
/// user reach this one, as Open MPI does for the same calls. Nothing under
/// other settings (0 allows it already, 2 and 3 refuse it anyway).
void allow_cross_memory_from_peers();

/// Every rank's tensors of one call: its pieces in its own address space
/// (this rank's are its own), and its process id.
struct SingleCopyRanks {
  std::vector<std::vector<ReducePiece>> pieces;
  std::vector<int64_t> pids;
  int me = 0;
};

/// Reduces elements [begin, begin + length) of the concatenation (this
/// rank's part) over all ranks, in rank order: op over ranks of (input *
/// prescale), then * scale; writes it to every rank's outputs. `streaming`:
/// this rank's outputs with streaming stores, ordered before it returns.
/// Stops at the first failure to reach a peer and returns it.
CrossMemoryFailure single_copy_reduce_part(const SingleCopyRanks& ranks, const CrossMemoryCalls& calls,
                                           int64_t begin, int64_t length, DataType dtype, ReduceOp op,
                                           double prescale, PostScale scale, bool streaming,
                                           std::vector<char>* scratch);

}  // namespace chorus::detail
