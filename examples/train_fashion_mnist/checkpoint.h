#pragma once
/// \file checkpoint.h
/// Checkpoints of a training run: the model, the optimizer state and the
/// number of finished epochs in one file, written atomically by one rank
/// and restored on every rank through Chorus broadcasts.

#include <cstdint>
#include <string>

#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

namespace chorus_examples {

/// Writes the checkpoint to `path` so that it is never seen half-written:
/// a temporary file in the same directory, fsync, rename over `path`, fsync
/// of the directory. Throws std::runtime_error naming the file on failure
/// (the temporary file is removed).
void save_checkpoint(const std::string& path, const torch::nn::Module& model,
                     const torch::optim::Optimizer& optimizer, int64_t epochs_done);

/// Reads a checkpoint into `model` and `optimizer` on this process only;
/// returns the number of finished epochs. Throws std::runtime_error naming
/// the file when it is missing or not a checkpoint of this model.
int64_t load_checkpoint(const std::string& path, torch::nn::Module& model, torch::optim::Optimizer& optimizer);

/// Collective: `root_rank` loads the checkpoint, then every rank receives
/// its model, optimizer state and epoch count. A failure on the root (no
/// such file, wrong model) throws the root's message on every rank.
///
/// Call it before wrapping `optimizer` in a chorus::DistributedOptimizer:
/// loading a module gives its parameters new storage (Tensor::set_), and
/// with it new gradient accumulators, so gradient hooks installed earlier
/// would never fire on the root.
int64_t resume_from_checkpoint(const std::string& path, torch::nn::Module& model,
                               torch::optim::Optimizer& optimizer, int root_rank);

}  // namespace chorus_examples
