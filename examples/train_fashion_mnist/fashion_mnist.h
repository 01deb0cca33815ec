#pragma once
/// \file fashion_mnist.h
/// Fashion-MNIST as a torch::data dataset, read from the gzipped IDX files
/// of the Debian package dataset-fashion-mnist (or any directory with the
/// same four files, gzipped or not).

#include <cstddef>
#include <string>

#include "in_memory_dataset.h"

namespace chorus_examples {

/// The training (60000 images) or test (10000 images) split. Images are
/// float32 [N, 1, 28, 28] normalized with the training set's mean and
/// standard deviation; labels are int64 [N] in 0..9.
class FashionMnist : public InMemoryDataset<FashionMnist> {
 public:
  enum class Split { kTrain, kTest };

  /// Reads `<dir>/{train,t10k}-images-idx3-ubyte[.gz]` and the matching
  /// labels file. Throws std::runtime_error naming the file when one is
  /// missing, malformed (magic number, 28x28 size, labels out of range), or
  /// when images and labels disagree on the count.
  FashionMnist(const std::string& dir, Split split);
};

}  // namespace chorus_examples
