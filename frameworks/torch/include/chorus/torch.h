#pragma once
/// \file torch.h
/// Chorus for LibTorch: collectives on torch::Tensor, DistributedOptimizer
/// (dense and sparse gradients), SyncBatchNorm, broadcast of parameters,
/// optimizer state and objects, gradient compression and a loss scaler
/// whose decisions agree across ranks.
/// Horovod users find the names they know in namespace chorus.
///
///     chorus::init();
///     chorus::broadcast_parameters(model->named_parameters(), 0);
///     chorus::broadcast_optimizer_state(*sgd, 0);
///     chorus::DistributedOptimizer opt(sgd, model->named_parameters());
///     ... loss.backward(); opt.step(); opt.zero_grad();
///
/// Guide: docs/torch.md.

#include "chorus/chorus.h"
#include "chorus/torch/broadcast_state.h"
#include "chorus/torch/compression.h"
#include "chorus/torch/distributed_optimizer.h"
#include "chorus/torch/elastic.h"
#include "chorus/torch/loss_scaler.h"
#include "chorus/torch/ops.h"
#include "chorus/torch/shared_host_tensor.h"
#include "chorus/torch/sync_batch_norm.h"
