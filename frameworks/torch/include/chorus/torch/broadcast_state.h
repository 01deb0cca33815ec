#pragma once
/// \file broadcast_state.h
/// Making every rank start from the same state: parameters and buffers,
/// optimizer state (created where it does not exist yet), any object.
/// All of these are collectives: every rank calls them with the same root.

#include <cstring>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>
#include <torch/ordered_dict.h>
#include <torch/serialize.h>

#include "chorus/torch/distributed_optimizer.h"

namespace chorus {

/// root_rank's values of the named tensors, written in place on every rank.
/// The ranks' lists must agree (names, count); a mismatch throws
/// chorus::InvalidArgumentError on every rank naming the odd ranks.
void broadcast_parameters(const std::vector<std::pair<std::string, torch::Tensor>>& named_tensors, int root_rank);
void broadcast_parameters(const torch::OrderedDict<std::string, torch::Tensor>& named_tensors, int root_rank);
/// A whole module: its parameters and its buffers (BatchNorm statistics, ...).
void broadcast_parameters(const torch::nn::Module& module, int root_rank);

/// root_rank's optimizer state on every rank: per-parameter state (momentum
/// buffers, Adam's step and moments; created on ranks that have none yet,
/// dropped where the root has none) and every param group's options (lr,
/// momentum, betas, weight decay, ...). The optimizers must have the same
/// param groups with the same parameter shapes on every rank.
void broadcast_optimizer_state(torch::optim::Optimizer& optimizer, int root_rank);
void broadcast_optimizer_state(DistributedOptimizer& optimizer, int root_rank);

/// root_rank's bytes on every rank (other ranks' input is ignored).
std::string broadcast_bytes(const std::string& bytes, int root_rank, const std::string& name = "");

/// root_rank's value on every rank. T is trivially copyable (an int, a
/// struct of numbers), std::string, or anything torch::save / torch::load
/// serialize (torch::Tensor, std::vector<torch::Tensor>, c10::IValue via
/// an archive, a module holder).
template <typename T>
T broadcast_object(const T& value, int root_rank, const std::string& name = "") {
  if constexpr (std::is_same_v<T, std::string>) {
    return broadcast_bytes(value, root_rank, name);
  } else if constexpr (std::is_trivially_copyable_v<T>) {
    std::string bytes(sizeof(T), '\0');
    std::memcpy(bytes.data(), &value, sizeof(T));
    bytes = broadcast_bytes(bytes, root_rank, name);
    T out;
    std::memcpy(&out, bytes.data(), sizeof(T));
    return out;
  } else {
    std::ostringstream os;
    torch::save(value, os);
    std::istringstream is(broadcast_bytes(os.str(), root_rank, name));
    T out;
    torch::load(out, is);
    return out;
  }
}

}  // namespace chorus
