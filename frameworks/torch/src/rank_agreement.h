#pragma once
// Checks that every rank passed the same list (parameter names, optimizer
// layout) before a sequence of collectives whose names come from it: a list
// that differs would otherwise leave ranks waiting for names the others
// never send.

#include <string>
#include <vector>

#include "chorus/process_set.h"

namespace chorus {
namespace torch_adapter {

/// Collective: compares the count and a fingerprint of `items` across ranks;
/// throws InvalidArgumentError on every rank, naming which ranks hold which
/// list, when they differ. `what` names the caller ("broadcast_parameters").
/// Among the members of `process_set` (ranks named by their global rank).
void check_same_on_all_ranks(const std::vector<std::string>& items, const std::string& what,
                             const ProcessSet& process_set = ProcessSet());

}  // namespace torch_adapter
}  // namespace chorus
