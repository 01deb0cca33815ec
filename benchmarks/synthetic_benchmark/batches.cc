#include "batches.h"

#include <optional>
#include <stdexcept>

#include <torch/data.h>

#include <chorus/chorus.h>

#include "cifar10.h"

namespace chorus_examples {
namespace {

class RandomBatches : public BatchSource {
 public:
  explicit RandomBatches(int64_t batch_size)
      : batch_{torch::randn({batch_size, 3, 32, 32}), torch::randint(0, 10, {batch_size}, torch::kInt64)} {}
  Batch next() override { return batch_; }

 private:
  Batch batch_;
};

class Cifar10Batches : public BatchSource {
 public:
  Cifar10Batches(const std::string& dir, int64_t batch_size)
      : data_(dir, Cifar10::Split::kTrain), batch_size_(batch_size) {
    const int64_t per_rank = (static_cast<int64_t>(*data_.size()) + chorus::size() - 1) / chorus::size();
    if (per_rank < batch_size_) {
      throw std::invalid_argument("--batch-size " + std::to_string(batch_size_) + " is larger than this rank's " +
                                  std::to_string(per_rank) + " CIFAR-10 images");
    }
  }

  Batch next() override {
    if (!it_ || *it_ == loader_->end()) start_epoch();
    auto& example = **it_;
    Batch b{example.data, example.target};
    ++*it_;
    return b;
  }

 private:
  using Dataset = torch::data::datasets::MapDataset<Cifar10, torch::data::transforms::Stack<>>;
  using Loader = torch::data::StatelessDataLoader<Dataset, torch::data::samplers::DistributedRandomSampler>;

  void start_epoch() {
    it_.reset();  // the iterator refers to the loader it came from
    torch::data::samplers::DistributedRandomSampler sampler(*data_.size(), chorus::size(), chorus::rank());
    sampler.set_epoch(epoch_++);
    // drop_last: every step has a full batch, as in the synthetic workload.
    loader_ = torch::data::make_data_loader(data_.map(torch::data::transforms::Stack<>()), std::move(sampler),
                                            torch::data::DataLoaderOptions(batch_size_).workers(0).drop_last(true));
    it_ = loader_->begin();
  }

  Cifar10 data_;
  int64_t batch_size_;
  size_t epoch_ = 0;
  std::unique_ptr<Loader> loader_;
  std::optional<torch::data::Iterator<Loader::BatchType>> it_;
};

}  // namespace

std::unique_ptr<BatchSource> random_batches(int64_t batch_size) {
  return std::make_unique<RandomBatches>(batch_size);
}

std::unique_ptr<BatchSource> cifar10_batches(const std::string& dir, int64_t batch_size) {
  return std::make_unique<Cifar10Batches>(dir, batch_size);
}

}  // namespace chorus_examples
