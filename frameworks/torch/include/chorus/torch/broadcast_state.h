#pragma once
/// \file broadcast_state.h
/// Making every rank start from the same state: parameters and buffers,
/// optimizer state (created where it does not exist yet), any object.
/// All of these are collectives: every rank of the process set calls them
/// with the same root.

#include <string>
#include <utility>
#include <vector>

#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>
#include <torch/ordered_dict.h>

#include "chorus/process_set.h"
#include "chorus/torch/distributed_optimizer.h"
#include "chorus/torch/object_bytes.h"

namespace chorus {

/// Every call below is a collective among the members of `process_set` (the
/// global set by default): each member calls it with the same root, which
/// is a global rank inside the set. Two sets can so broadcast and train
/// different models in one job.

/// root_rank's values of the named tensors, written in place on every rank.
/// The ranks' lists must agree (names, count); a mismatch throws
/// chorus::InvalidArgumentError on every rank naming the odd ranks.
void broadcast_parameters(const std::vector<std::pair<std::string, torch::Tensor>>& named_tensors, int root_rank,
                          const ProcessSet& process_set = ProcessSet());
void broadcast_parameters(const torch::OrderedDict<std::string, torch::Tensor>& named_tensors, int root_rank,
                          const ProcessSet& process_set = ProcessSet());
/// A whole module: its parameters and its buffers (BatchNorm statistics, ...).
void broadcast_parameters(const torch::nn::Module& module, int root_rank, const ProcessSet& process_set = ProcessSet());

/// root_rank's optimizer state on every rank: per-parameter state (momentum
/// buffers, Adam's step and moments; created on ranks that have none yet,
/// dropped where the root has none) and every param group's options (lr,
/// momentum, betas, weight decay, ...). The optimizers must have the same
/// param groups with the same parameter shapes on every rank.
void broadcast_optimizer_state(torch::optim::Optimizer& optimizer, int root_rank,
                               const ProcessSet& process_set = ProcessSet());
/// A DistributedOptimizer's wrapped optimizer, in the optimizer's own process
/// set unless `process_set` names one.
void broadcast_optimizer_state(DistributedOptimizer& optimizer, int root_rank);
void broadcast_optimizer_state(DistributedOptimizer& optimizer, int root_rank, const ProcessSet& process_set);

/// root_rank's bytes on every rank (other ranks' input is ignored).
std::string broadcast_bytes(const std::string& bytes, int root_rank, const std::string& name = "",
                            const ProcessSet& process_set = ProcessSet());
/// Every member's bytes, in set rank order (lengths may differ per rank).
/// The building block for objects with a serializer of your own.
std::vector<std::string> allgather_bytes(const std::string& bytes, const std::string& name = "",
                                         const ProcessSet& process_set = ProcessSet());

/// root_rank's value on every rank (Horovod's broadcast_object; root_rank 0
/// by default, as there). T is anything torch_object::to_bytes serializes
/// (object_bytes.h: numbers, structs, strings, standard containers of them,
/// c10::IValue dicts and lists, tensors).
template <typename T>
T broadcast_object(const T& value, int root_rank = 0, const std::string& name = "",
                   const ProcessSet& process_set = ProcessSet()) {
  return torch_object::from_bytes<T>(broadcast_bytes(torch_object::to_bytes(value), root_rank, name, process_set));
}

/// Every member's value, in set rank order (Horovod's allgather_object,
/// which pickles; here torch_object::to_bytes, or allgather_bytes with a
/// serializer of your own).
template <typename T>
std::vector<T> allgather_object(const T& value, const std::string& name = "",
                                const ProcessSet& process_set = ProcessSet()) {
  std::vector<T> out;
  for (const std::string& bytes : allgather_bytes(torch_object::to_bytes(value), name, process_set)) {
    out.push_back(torch_object::from_bytes<T>(bytes));
  }
  return out;
}

}  // namespace chorus
