#pragma once
// Deterministic names for operations the caller did not name: every rank
// that calls the same unnamed operations in the same order gets the same
// names ("allreduce.noname.3"), counted per operation kind.

#include <string>

namespace chorus {
namespace torch_adapter {

/// `name` if not empty, else "<op>.noname.<n>" with n counting unnamed `op` calls.
std::string name_or_auto(const std::string& name, const char* op);

}  // namespace torch_adapter
}  // namespace chorus
