#pragma once
/// \file shared_host_tensor.h
/// CPU tensors in this rank's shared-memory arena (chorus::allocate_shared_host).
/// When every rank on a host allreduces tensors that lie there, the ranks
/// read and write each other's tensors in place, with no staging copies;
/// DistributedOptimizer keeps its flat gradient buffers there.

#include <torch/types.h>

namespace chorus {

/// An uninitialized contiguous CPU tensor of `sizes` (`options` give dtype
/// and requires_grad; a device other than the CPU throws
/// chorus::InvalidArgumentError) in the arena; ordinary memory when the
/// ranks span hosts or the arena is full. The memory goes back to the arena
/// when the tensor's storage is freed. Needs chorus::init().
torch::Tensor empty_shared_host(at::IntArrayRef sizes, const torch::TensorOptions& options = {});

}  // namespace chorus
