#pragma once
// One yes/no per rank, agreed by one allgather: which ranks said no. For
// decisions every rank must take together (NCCL loads everywhere, the staged
// path's transport started, every copy to the host succeeded), with the
// ranks that said no named in the message.

#include <cstdint>
#include <vector>

#include "comm/backend.h"
#include "common/status_or.h"

namespace chorus::detail {

/// Every rank of `comm` gives `mine`; the answer is the same on every
/// rank: the world ranks (through `scope`) whose answer was false.
inline StatusOr<std::vector<int>> ranks_saying_no(Communicator& comm, int size, const SetScope& scope, bool mine) {
  const uint8_t flag = mine ? 1 : 0;
  std::vector<uint8_t> flags(static_cast<size_t>(size));
  const Status s = comm.allgatherv(&flag, flags.data(), std::vector<int64_t>(flags.size(), 1), 1);
  if (!s.is_ok()) return s;
  std::vector<int> no;
  for (int r = 0; r < size; ++r)
    if (!flags[static_cast<size_t>(r)]) no.push_back(scope.world_rank(r));
  return no;
}

}  // namespace chorus::detail
