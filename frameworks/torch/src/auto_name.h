#pragma once
// Deterministic names for operations the caller did not name: every rank
// that calls the same unnamed operations in the same order gets the same
// names ("allreduce.noname.3"; "allreduce.set2.noname.0" in process set 2),
// counted per operation kind and process set.

#include <string>

#include "chorus/process_set.h"

namespace chorus {
namespace torch_adapter {

/// `name` if not empty, else "<op>[.set<id>].noname.<n>" with n counting
/// unnamed `op` calls in that set.
std::string name_or_auto(const std::string& name, const char* op, const ProcessSet& process_set = ProcessSet());

}  // namespace torch_adapter
}  // namespace chorus
