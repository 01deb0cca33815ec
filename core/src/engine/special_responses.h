#pragma once
// The two response kinds the background loop cannot hand to the executor as
// they are: a process-set registration (the backend splits, on this thread)
// and an allreduce this rank joined out of (it takes part with zeros).

#include <string>
#include <vector>

#include "comm/backend.h"
#include "common/logging.h"
#include "negotiation/messages.h"
#include "engine/tensor_entry.h"

namespace chorus::detail {

/// Every rank reached the registrations in `entries` at this point of the
/// response order: splits `backend` for each new set and completes them.
void register_process_sets(Backend& backend, std::vector<TensorEntry> entries);

/// When this rank joined and never submitted `name`: fills `out` with a
/// stand-in of zeros of the shape the other ranks agreed on (from the
/// response's joined specs), so their allreduce can run; false otherwise.
/// No memory for the zeros ends the job (the others are already in it).
bool stand_in_for_joined(const Response& response, const std::string& name, int rank, const Logger& logger,
                         TensorEntry* out);

}  // namespace chorus::detail
