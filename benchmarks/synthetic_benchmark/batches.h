#pragma once
/// \file batches.h
/// Where the benchmark's batches come from: one fixed random batch (the
/// synthetic workload), or CIFAR-10 shuffled across ranks epoch after epoch.

#include <cstdint>
#include <memory>
#include <string>

#include <torch/types.h>

namespace chorus_examples {

struct Batch {
  torch::Tensor images;  ///< float32 [B, 3, 32, 32]
  torch::Tensor labels;  ///< int64 [B]
};

class BatchSource {
 public:
  virtual ~BatchSource() = default;
  virtual Batch next() = 0;
};

/// The same random batch every time: measures compute and communication
/// only, like Horovod's synthetic benchmark.
std::unique_ptr<BatchSource> random_batches(int64_t batch_size);

/// Full batches of the CIFAR-10 training files in `dir`, this rank's share
/// of each epoch (DistributedRandomSampler, reshuffled every epoch).
/// Collective in the sense that every rank must use the same batch size.
std::unique_ptr<BatchSource> cifar10_batches(const std::string& dir, int64_t batch_size);

}  // namespace chorus_examples
