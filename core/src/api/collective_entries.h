#pragma once
// The checked TensorEntry of each collective, built on the caller's thread:
// what Runtime's single and grouped calls enqueue. Bad input throws
// InvalidArgumentError naming the tensor.

#include <memory>
#include <string>
#include <vector>

#include "chorus/options.h"
#include "chorus/tensor.h"
#include "engine/tensor_entry.h"

namespace chorus::detail {

[[noreturn]] void invalid(const std::string& message);
void check_name(const std::string& name, const char* what);

/// What every collective's request carries; `shape` is the tensor's (read
/// once by the caller when it needed it too).
TensorEntry tensor_entry(CollectiveType type, const std::string& name, const std::shared_ptr<Tensor>& tensor, int rank,
                         OpHooks hooks, const TensorShape& shape);
TensorEntry tensor_entry(CollectiveType type, const std::string& name, const std::shared_ptr<Tensor>& tensor, int rank,
                         OpHooks hooks);

/// `rank` is the caller's rank in the set the operation runs in.
TensorEntry allreduce_entry(const std::string& name, std::shared_ptr<Tensor> input, std::shared_ptr<Tensor> output,
                            const AllreduceOptions& options, int rank);
TensorEntry allgather_entry(const std::string& name, const std::shared_ptr<Tensor>& input, int rank, OpHooks hooks);
TensorEntry reducescatter_entry(const std::string& name, const std::shared_ptr<Tensor>& input,
                                const AllreduceOptions& options, int rank, OpHooks hooks);
/// `topo`: the set's, for the number of splits (empty: equal splits).
TensorEntry alltoall_entry(const std::string& name, const std::shared_ptr<Tensor>& input, std::vector<int64_t> splits,
                           const Topology& topo);
/// `set_root`: the root's rank in the set, or -1 when `named_root` (a global
/// rank) is not in it: negotiated, so every rank fails, not this one alone.
TensorEntry broadcast_entry(const std::string& name, std::shared_ptr<Tensor> input, std::shared_ptr<Tensor> output,
                            int set_root, int named_root, int rank);

/// The collective a public Collective names (throws for a value outside the enum).
CollectiveType collective_type(Collective kind);

/// This rank's refusal of its own call (`why`: what was wrong with its
/// input), as an entry that still takes part in negotiation under `name`:
/// the coordinator fails the tensor on every rank with `why`, naming this
/// rank, so the ranks that called with good input never wait for it.
TensorEntry refused_entry(CollectiveType type, const std::string& name, int rank, OpHooks hooks,
                          const std::string& why);
/// A group's refusal: one refused entry per name, tied as make_group ties
/// the called ones (the same group name on every rank). `hooks`: one per
/// name, or none.
std::vector<TensorEntry> refused_group(CollectiveType type, const std::vector<std::string>& names, int rank,
                                       const std::vector<OpHooks>& hooks, const char* kind, const std::string& why);

/// Ties `entries` into one group (negotiated and completed together): every
/// rank derives the same group name from the same first name, kind and count.
void make_group(std::vector<TensorEntry>& entries, const char* kind);

/// Throws unless there is one tensor (and one output or hooks, when any are
/// given) per name and at least one name.
/// `others` counts what `others_are` names ("outputs" or "hooks").
void check_group_sizes(const char* kind, const std::vector<std::string>& names, size_t inputs, size_t others,
                       const char* others_are = "outputs");

/// Throws unless there is one hooks per name, all in one process set.
/// Checked inside the refusal's reach: the group is refused in group_set(),
/// negotiated there.
void check_group_hooks(const char* kind, const std::vector<std::string>& names, const std::vector<OpHooks>& hooks);

/// The process set a group negotiates in: member 0's. Throws (on this rank
/// only: there is nothing to negotiate in) without names or hooks.
const ProcessSet& group_set(const std::vector<OpHooks>& hooks, const char* kind, const std::vector<std::string>& names);

}  // namespace chorus::detail
