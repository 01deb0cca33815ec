// The single-copy path of the shared-memory allreduce on in-process ranks
// (threads: process_vm_readv/writev on the process's own id reach the
// other threads' memory as they reach another process's): world sizes
// 1..8, every dtype and op, in place and out of place, tensors cut into
// pieces differently on every rank (many segments per system call),
// scaling, calls of several chunks and with streaming stores; the same bits
// as staging and zero-copy; and refused or failing cross-memory calls:
// every rank falls back together or fails with the same error, never hangs.
#include <catch2/catch.hpp>

#include <cerrno>

#include "shm_cases.h"

using namespace chorus;
using namespace chorus::detail;
using namespace chorus::test;
using namespace chorus::test::shm_cases;

namespace {

// Elements of a float32 part that span several single-copy chunks on 2 ranks.
constexpr int64_t kSeveralChunks = 5 * kSingleCopyChunkBytes / 4 * 2 + 13;

}  // namespace

TEST_CASE("Single-copy allreduce: world sizes 1..8, counts around n, primes and large", "[shm][cma][matrix]") {
  sizes_and_counts(Placement::kHeap, {4096}, true);
}

TEST_CASE("Single-copy allreduce: every dtype and op, in place and out of place", "[shm][cma]") {
  every_dtype_and_op(Placement::kHeap, 100003, 4096, true);
}

TEST_CASE("Single-copy allreduce scales before and after, over several chunks", "[shm][cma]") {
  scalings(Placement::kHeap, {1, 2, 3, 4}, kSeveralChunks, 4096, true);
}

TEST_CASE("Single-copy allreduce: calls large enough for streaming stores", "[shm][cma]") {
  scalings(Placement::kHeap, {2, 3}, kZeroCopyStreamingBytes / 4 + 13, 1 << 20, true);
}

TEST_CASE("Single-copy allreduce: arenas still go zero-copy, a mix goes single copy", "[shm][cma][arena]") {
  Case c;
  c.single_copy = true;
  c.count = 40009;
  for (Placement placement : {Placement::kArenas, Placement::kArenasButRank0}) {
    for (int size : {2, 3}) {
      INFO("placement " << int(placement) << ", size " << size);
      c.placement = placement;
      c.size = size;
      REQUIRE(run(c) == 0);
    }
  }
}

TEST_CASE("Single-copy, staged and zero-copy calls give the same bits", "[shm][cma][arena]") {
  for (int size : {2, 3, 4}) {
    for (double prescale : {1.0, 0.3}) {
      INFO("size " << size << ", prescale " << prescale);
      const PostScale scale{1.0, size};
      const auto zero_copy = random_sums(Placement::kArenas, size, kSeveralChunks, prescale, scale);
      const auto single = random_sums(Placement::kHeap, size, kSeveralChunks, prescale, scale, true);
      const auto staged = random_sums(Placement::kHeap, size, kSeveralChunks, prescale, scale);
      for (int r = 0; r < size; ++r) {
        REQUIRE(single[static_cast<size_t>(r)].size() == static_cast<size_t>(kSeveralChunks));
        REQUIRE(std::memcmp(single[static_cast<size_t>(r)].data(), zero_copy[0].data(), kSeveralChunks * 4) == 0);
        REQUIRE(std::memcmp(staged[static_cast<size_t>(r)].data(), zero_copy[0].data(), kSeveralChunks * 4) == 0);
      }
    }
  }
}

namespace {

// Cross-memory calls that fail as the thread (rank) running them says.
thread_local int fail_with = 0;                 // errno of the one call that fails; 0: none
thread_local int64_t calls_before_failing = 0;  // calls that succeed before it
thread_local size_t most_bytes_per_call = 0;    // > 0: partial transfers of at most this much
thread_local bool read_other_memory = false;     // the first read finds another process's word

ssize_t faulty(CrossMemoryCall real, pid_t pid, const iovec* local, unsigned long n_local, const iovec* remote,
               unsigned long n_remote) {
  if (fail_with != 0 && calls_before_failing-- == 0) {
    errno = fail_with;
    return -1;
  }
  if (read_other_memory && real == ::process_vm_readv) {
    read_other_memory = false;
    std::memset(local->iov_base, 0x5a, local->iov_len);
    return static_cast<ssize_t>(local->iov_len);
  }
  if (most_bytes_per_call == 0 || n_local != 1 || local->iov_len <= most_bytes_per_call) {
    return real(pid, local, n_local, remote, n_remote, 0);
  }
  const iovec shorter{local->iov_base, most_bytes_per_call};
  return real(pid, &shorter, 1, remote, n_remote, 0);
}

ssize_t faulty_read(pid_t pid, const iovec* l, unsigned long nl, const iovec* r, unsigned long nr, unsigned long) {
  return faulty(::process_vm_readv, pid, l, nl, r, nr);
}
ssize_t faulty_write(pid_t pid, const iovec* l, unsigned long nl, const iovec* r, unsigned long nr, unsigned long) {
  return faulty(::process_vm_writev, pid, l, nl, r, nr);
}

struct FaultyRankResult {
  std::vector<Status> statuses;
  std::vector<SharedPath> paths;
  std::string refusal;
  int64_t wrong = 0;
};

// Three calls of `count` floats on `size` ranks, single copy asked for;
// rank `faulty_rank` fails as `setup` says (the first call to fail is
// the only one). Counts wrong results of the calls that returned ok.
std::vector<FaultyRankResult> run_faulty(int size, int faulty_rank, int64_t count, void (*setup)()) {
  HeapStaging group(size, 4096);
  return on_thread_ranks<FaultyRankResult>(size, [&](int r) {
    fail_with = 0;
    calls_before_failing = 0;
    most_bytes_per_call = 0;
    read_other_memory = false;
    if (r == faulty_rank) setup();
    SharedMemoryAllreduce shm(group.slots(r), CrossMemoryCalls{faulty_read, faulty_write});
    FaultyRankResult out;
    for (int call = 0; call < 3; ++call) {
      std::vector<float> buf(static_cast<size_t>(count));
      for (int64_t i = 0; i < count; ++i) buf[static_cast<size_t>(i)] = float(call + r + i % 100);
      char* bytes = reinterpret_cast<char*>(buf.data());
      out.statuses.push_back(
          shm.allreduce(cut(bytes, bytes, count, 4, 7u + static_cast<uint32_t>(r)), DataType::kFloat32,
                        ReduceOp::kSum, 1.0, {}, true));
      out.paths.push_back(shm.last_path());
      if (!out.statuses.back().is_ok()) continue;
      for (int64_t i = 0; i < count; ++i) {
        out.wrong += buf[static_cast<size_t>(i)] != float(size * (call + i % 100) + size * (size - 1) / 2);
      }
    }
    out.refusal = shm.single_copy_refusal();
    return out;
  });
}

}  // namespace

TEST_CASE("Single-copy allreduce: partial transfers go on where they stopped", "[shm][cma]") {
  const auto results = run_faulty(3, 1, 15013, [] { most_bytes_per_call = 1000; });
  for (const FaultyRankResult& r : results) {
    for (const Status& s : r.statuses) REQUIRE(s.is_ok());
    for (SharedPath p : r.paths) REQUIRE(p == SharedPath::kSingleCopy);
    REQUIRE(r.wrong == 0);
  }
}

TEST_CASE("Single-copy allreduce: a rank refused by the probe sends every rank to staging", "[shm][cma]") {
  const auto results = run_faulty(3, 1, 5003, [] { fail_with = EPERM; });
  for (const FaultyRankResult& r : results) {
    for (const Status& s : r.statuses) REQUIRE(s.is_ok());
    for (SharedPath p : r.paths) REQUIRE(p == SharedPath::kStaged);
    REQUIRE(r.wrong == 0);
    REQUIRE(r.refusal == "rank 1 could not read rank 0's memory (process_vm_readv: Operation not permitted)");
  }
}

TEST_CASE("Single-copy allreduce: a probe word that is not the peer's (another pid namespace) stages everywhere",
          "[shm][cma]") {
  const auto results = run_faulty(3, 2, 5003, [] { read_other_memory = true; });
  for (const FaultyRankResult& r : results) {
    for (const Status& s : r.statuses) REQUIRE(s.is_ok());
    for (SharedPath p : r.paths) REQUIRE(p == SharedPath::kStaged);
    REQUIRE(r.wrong == 0);
    REQUIRE(r.refusal == "rank 2 could not read rank 0's memory (process_vm_readv: No such process)");
  }
}

TEST_CASE("Single-copy allreduce: a failure mid-call is the same error on every rank, then calls go on",
          "[shm][cma]") {
  // The probe's read and write succeed, then the first call's work fails on
  // rank 2: every rank returns the error naming it; the next calls (single
  // copy again) are exact.
  const auto results = run_faulty(3, 2, 5003, [] {
    fail_with = EFAULT;
    calls_before_failing = 4;  // the probe of ranks 0 and 1 (a read and a write each)
  });
  for (const FaultyRankResult& r : results) {
    REQUIRE_FALSE(r.statuses[0].is_ok());
    REQUIRE_THAT(r.statuses[0].message(), Catch::Contains("rank 2 could not read rank 0's memory (process_vm_readv: "
                                                          "Bad address)"));
    REQUIRE(r.statuses[0].message() == results[0].statuses[0].message());
    REQUIRE(r.paths[0] == SharedPath::kSingleCopy);
    REQUIRE(r.refusal.empty());
    for (size_t call = 1; call < r.statuses.size(); ++call) {
      REQUIRE(r.statuses[call].is_ok());
      REQUIRE(r.paths[call] == SharedPath::kSingleCopy);
    }
    REQUIRE(r.wrong == 0);
  }
}
