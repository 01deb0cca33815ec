#pragma once
/// \file checkpoint.h
/// Checkpoints across ranks: one rank writes or reads the file
/// (checkpoint_file.h), and every rank learns the outcome, so a bad path or
/// a bad file is the same clear error on every rank, never some ranks
/// training and some not.

#include <cstdint>
#include <string>

#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include "checkpoint_file.h"

namespace chorus_examples {

/// Collective: `root_rank` checks that a checkpoint can be written at
/// `path` (check_checkpoint_writable); if not, every rank throws the root's
/// message. Call it before training, not to lose an epoch to a typo.
void require_checkpoint_writable(const std::string& path, int root_rank);

/// Collective: `root_rank` loads the checkpoint, then every rank receives
/// its model, optimizer state and epoch count. A failure on the root (no
/// such file, a truncated or corrupt file, wrong model) throws the root's
/// message on every rank.
///
/// Call it before wrapping `optimizer` in a chorus::DistributedOptimizer:
/// loading a module gives its parameters new storage (Tensor::set_), and
/// with it new gradient accumulators, so gradient hooks installed earlier
/// would never fire on the root.
int64_t resume_from_checkpoint(const std::string& path, torch::nn::Module& model,
                               torch::optim::Optimizer& optimizer, int root_rank);

}  // namespace chorus_examples
