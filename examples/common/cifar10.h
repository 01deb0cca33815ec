#pragma once
/// \file cifar10.h
/// CIFAR-10 in its binary format (cifar-10-batches-bin) as a torch::data
/// dataset: records of 1 label byte and 3072 pixel bytes (1024 red, 1024
/// green, 1024 blue, row-major 32x32).

#include <cstddef>
#include <string>
#include <vector>

#include "in_memory_dataset.h"

namespace chorus_examples {

/// Images float32 [N, 3, 32, 32] normalized per channel with the training
/// set's mean and standard deviation; labels int64 [N] in 0..9.
class Cifar10 : public InMemoryDataset<Cifar10> {
 public:
  enum class Split { kTrain, kTest };
  static constexpr int64_t kRecordBytes = 1 + 3 * 32 * 32;

  /// `dir`/data_batch_1.bin .. data_batch_5.bin (train) or test_batch.bin.
  static std::vector<std::string> files(const std::string& dir, Split split);

  /// The standard files of `split` in `dir`.
  Cifar10(const std::string& dir, Split split);
  /// The records of `paths`, in order. Throws std::runtime_error naming the
  /// file when one is missing, empty, not a whole number of records
  /// (truncated) or holds a label outside 0..9.
  explicit Cifar10(const std::vector<std::string>& paths);
};

}  // namespace chorus_examples
