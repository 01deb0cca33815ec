#include "dataplane/algorithms/exchange_area.h"

#include <unistd.h>

#include <cstring>

#include "comm/shm/shared_slots.h"

namespace chorus::detail {

namespace {

// The area's layout: a header of one cache line, then one entry per piece.
struct AreaHeader {
  uint32_t described, in_arena;
  uint32_t pieces, unused;
  int64_t total;  // elements over all pieces: checked against the others'
  int64_t pid;
  uint64_t arena_base;  // the owner's arena as mapped in the owner
  uint64_t probe;       // address of the owner's probe word
  int32_t failure_errno[2];  // per FailureSlot
  int16_t failure_peer[2], failure_writing[2];
};
struct AreaEntry {
  uint64_t input, output;  // addresses in the owner's address space
  int64_t count;
};
static_assert(sizeof(AreaHeader) == 64 && sizeof(AreaEntry) == 24, "kExchangeAreaBytes assumes these sizes");
static_assert(sizeof(AreaHeader) + sizeof(AreaEntry) * kZeroCopyMaxPieces <= kExchangeAreaBytes,
              "an exchange area holds a header and kZeroCopyMaxPieces entries");

bool lies_in(const void* p, int64_t bytes, const char* arena, int64_t arena_bytes) {
  const char* c = static_cast<const char*>(p);
  return arena != nullptr && c >= arena && c - arena <= arena_bytes - bytes;
}

uint64_t address(const void* p) { return reinterpret_cast<uint64_t>(p); }

const AreaHeader& header_of(const char* area) { return *reinterpret_cast<const AreaHeader*>(area); }
const AreaEntry* entries_of(const char* area) { return reinterpret_cast<const AreaEntry*>(area + sizeof(AreaHeader)); }

}  // namespace

Publication publish_pieces(char* area, const std::vector<ReducePiece>& pieces, const char* arena,
                           int64_t arena_bytes, int64_t element_size, const uint64_t* probe) {
  auto* header = reinterpret_cast<AreaHeader*>(area);
  auto* entries = reinterpret_cast<AreaEntry*>(area + sizeof(AreaHeader));
  Publication mine{true, arena != nullptr};
  uint32_t published = 0;
  int64_t total = 0;
  for (const ReducePiece& p : pieces) {
    if (p.count == 0) continue;  // empty tensors (perhaps with no data at all) take no part
    if (published == kZeroCopyMaxPieces) {
      mine = Publication{};
      break;
    }
    const int64_t bytes = p.count * element_size;
    mine.in_arena = mine.in_arena && lies_in(p.input, bytes, arena, arena_bytes) &&
                    lies_in(p.output, bytes, arena, arena_bytes);
    entries[published++] = AreaEntry{address(p.input), address(p.output), p.count};
    total += p.count;
  }
  header->pieces = mine.described ? published : 0;
  header->total = mine.described ? total : -1;
  header->pid = static_cast<int64_t>(getpid());
  header->arena_base = address(arena);
  header->probe = address(probe);
  header->failure_errno[0] = header->failure_errno[1] = 0;
  header->in_arena = mine.in_arena ? 1 : 0;
  header->described = mine.described ? 1 : 0;
  return mine;
}

bool published_described(const char* area) { return header_of(area).described == 1; }
bool published_in_arena(const char* area) { return header_of(area).in_arena == 1; }
int64_t published_total(const char* area) { return header_of(area).total; }
int64_t published_pid(const char* area) { return header_of(area).pid; }
uint64_t published_probe(const char* area) { return header_of(area).probe; }

void published_pieces(const char* area, char* arena, std::vector<ReducePiece>* out) {
  const AreaHeader& header = header_of(area);
  const AreaEntry* entries = entries_of(area);
  out->resize(header.pieces);
  for (uint32_t i = 0; i < header.pieces; ++i) {
    (*out)[i] = ReducePiece{arena + (entries[i].input - header.arena_base),
                            arena + (entries[i].output - header.arena_base), entries[i].count};
  }
}

void published_remote_pieces(const char* area, std::vector<ReducePiece>* out) {
  const AreaHeader& header = header_of(area);
  const AreaEntry* entries = entries_of(area);
  out->resize(header.pieces);
  for (uint32_t i = 0; i < header.pieces; ++i) {
    (*out)[i] = ReducePiece{reinterpret_cast<const void*>(entries[i].input),
                            reinterpret_cast<void*>(entries[i].output), entries[i].count};
  }
}

std::string CrossMemoryFailure::describe(int rank) const {
  return "rank " + std::to_string(rank) + " could not " + (writing ? "write" : "read") + " rank " +
         std::to_string(peer) + "'s memory (" + (writing ? "process_vm_writev: " : "process_vm_readv: ") +
         std::strerror(error) + ")";
}

void publish_failure(char* area, FailureSlot slot, const CrossMemoryFailure& failure) {
  auto* header = reinterpret_cast<AreaHeader*>(area);
  const int s = static_cast<int>(slot);
  header->failure_peer[s] = static_cast<int16_t>(failure.peer);
  header->failure_writing[s] = failure.writing ? 1 : 0;
  header->failure_errno[s] = failure.error;
}

CrossMemoryFailure published_failure(const char* area, FailureSlot slot) {
  const AreaHeader& header = header_of(area);
  const int s = static_cast<int>(slot);
  return CrossMemoryFailure{header.failure_errno[s], header.failure_peer[s], header.failure_writing[s] != 0};
}

}  // namespace chorus::detail
