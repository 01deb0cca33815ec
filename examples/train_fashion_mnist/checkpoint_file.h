#pragma once
/// \file checkpoint_file.h
/// The checkpoint file on one process: the model, the optimizer state and
/// the number of finished epochs, written atomically and verified on load.
///
/// The file is LibTorch's archive followed by a 48-byte trailer: the
/// archive's SHA-256, its size (8 bytes, little-endian) and the magic
/// "CHORUSC1". LibTorch's reader does not check the archive's CRCs, so a
/// file changed on disk (flipped bytes, a cut-off copy) would otherwise load
/// and train on garbage.

#include <cstdint>
#include <string>

#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

namespace chorus_examples {

/// Writes the checkpoint to `path` so that it is never seen half-written:
/// a temporary file `path.tmp.<pid>` in the same directory, fsync, rename
/// over `path`, fsync of the directory. Temporary files an interrupted
/// earlier save left next to `path` are removed first. Throws
/// std::runtime_error naming the file on failure (the temporary file is
/// removed).
void save_checkpoint(const std::string& path, const torch::nn::Module& model,
                     const torch::optim::Optimizer& optimizer, int64_t epochs_done);

/// Reads a checkpoint into `model` and `optimizer` on this process only;
/// returns the number of finished epochs. Throws std::runtime_error naming
/// the file when it is missing, truncated, corrupt (digest mismatch) or not
/// a checkpoint of this model.
int64_t load_checkpoint(const std::string& path, torch::nn::Module& model, torch::optim::Optimizer& optimizer);

/// Throws std::runtime_error naming `path` unless a checkpoint can be
/// written there: its directory exists and takes a new file (tried with a
/// temporary file, removed again), and `path` is not a directory.
void check_checkpoint_writable(const std::string& path);

}  // namespace chorus_examples
