#pragma once
// What a rank tells the others about one shared-memory allreduce call, in
// its exchange area (SharedSlots::exchange, one of two by call parity):
// where its tensors lie (absolute addresses in its own address space, with
// its arena's base there, so a reader finds them in its mapping of that
// arena), its process id and a probe word for cross-memory reads
// (process_vm_readv/writev), and, after the work, whether it failed.
// Written by its owner before a barrier, read by everyone after it.

#include <cstdint>
#include <string>
#include <vector>

#include "dataplane/reduce_piece.h"

namespace chorus::detail {

/// What this rank's pieces of a call are, as published.
struct Publication {
  bool described = false;  ///< every non-empty piece is listed (at most kZeroCopyMaxPieces)
  bool in_arena = false;   ///< ... and all of them, inputs and outputs, lie in the rank's arena
};

/// Writes `pieces` (empty ones left out: their data may be null) to `area`
/// with their total count, this process's id and `probe`'s address, and
/// clears the area's failure. `arena` (`arena_bytes` long, or nullptr)
/// is this rank's arena as mapped here.
Publication publish_pieces(char* area, const std::vector<ReducePiece>& pieces, const char* arena,
                           int64_t arena_bytes, int64_t element_size, const uint64_t* probe);

bool published_described(const char* area);
bool published_in_arena(const char* area);
/// The elements the area's pieces add up to (-1 when not described).
int64_t published_total(const char* area);
/// The publishing process's id and the address of its probe word there.
int64_t published_pid(const char* area);
uint64_t published_probe(const char* area);

/// The pieces published in `area` (when in its arena), as addresses of that
/// arena mapped here at `arena`, into `*out` (its capacity kept across calls).
void published_pieces(const char* area, char* arena, std::vector<ReducePiece>* out);
/// The pieces published in `area` as addresses in the publisher's own
/// address space (for cross-memory reads and writes; not for this process
/// to dereference unless it published them itself).
void published_remote_pieces(const char* area, std::vector<ReducePiece>* out);

/// A rank's failure to reach another rank's memory: the errno and what it tried.
struct CrossMemoryFailure {
  int error = 0;  ///< errno; 0: no failure
  int peer = -1;
  bool writing = false;  ///< writing the peer's output (else reading its input or probe word)
  bool ok() const { return error == 0; }
  /// "rank 1 could not read rank 0's memory (process_vm_readv: Operation not permitted)"
  std::string describe(int rank) const;
};

/// Which failure: the probe of a rank's first single-copy call, or the
/// call's work. Two places, because a rank may write the second while a
/// slower one still reads the first.
enum class FailureSlot { kProbe = 0, kCall = 1 };

/// The owner's failure in this call (ok() when none; both are cleared by
/// the publication), read by the others after the next barrier.
void publish_failure(char* area, FailureSlot slot, const CrossMemoryFailure& failure);
CrossMemoryFailure published_failure(const char* area, FailureSlot slot);

}  // namespace chorus::detail
