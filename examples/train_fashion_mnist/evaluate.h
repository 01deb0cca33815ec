#pragma once
/// \file evaluate.h
/// Test accuracy computed by all ranks together.

#include <cstdint>

#include "fashion_mnist.h"
#include "model.h"

namespace chorus_examples {

struct Accuracy {
  int64_t correct = 0;
  int64_t total = 0;
  double fraction() const { return total == 0 ? 0.0 : static_cast<double>(correct) / static_cast<double>(total); }
};

/// Collective: rank r classifies its own contiguous shard of `test` (the
/// shards are disjoint and cover every image once), then the [correct,
/// total] counts are summed over all ranks with a Chorus allreduce. Every
/// rank returns the same, whole-test-set result. The model's train/eval
/// mode is restored afterwards.
Accuracy evaluate(FashionNet& model, const FashionMnist& test, int64_t batch_size = 1000);

}  // namespace chorus_examples
