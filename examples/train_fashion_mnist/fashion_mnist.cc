#include "fashion_mnist.h"

#include <sys/stat.h>

#include <stdexcept>

#include "idx_file.h"

namespace chorus_examples {
namespace {

constexpr int64_t kSide = 28;
constexpr int64_t kClasses = 10;
// Mean and standard deviation of the training images' pixels in [0, 1].
constexpr double kMean = 0.2860;
constexpr double kStd = 0.3530;

bool exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

// The Debian package ships gzipped files; an unpacked copy works as well.
std::string find_file(const std::string& dir, const std::string& name) {
  const std::string base = dir + "/" + name;
  if (exists(base + ".gz")) return base + ".gz";
  if (exists(base)) return base;
  throw std::runtime_error(base + ".gz: not found (nor " + base +
                           "); install the Debian package dataset-fashion-mnist or pass --data-dir");
}

torch::Tensor read_images(const std::string& path) {
  IdxFile idx = read_idx_file(path, 3);
  if (idx.dims[1] != kSide || idx.dims[2] != kSide) {
    throw std::runtime_error(path + ": images are " + std::to_string(idx.dims[1]) + "x" +
                             std::to_string(idx.dims[2]) + ", expected 28x28");
  }
  if (idx.dims[0] == 0) throw std::runtime_error(path + ": holds no images");
  auto bytes = torch::from_blob(idx.data.data(), {idx.dims[0], 1, kSide, kSide}, torch::kUInt8);
  // to(kFloat32) copies, so the tensor no longer points into idx.data.
  return (bytes.to(torch::kFloat32).div_(255.0).sub_(kMean).div_(kStd));
}

torch::Tensor read_labels(const std::string& path) {
  IdxFile idx = read_idx_file(path, 1);
  for (size_t i = 0; i < idx.data.size(); ++i) {
    if (idx.data[i] >= kClasses) {
      throw std::runtime_error(path + ": label " + std::to_string(idx.data[i]) + " at index " + std::to_string(i) +
                               " is not a class 0..9");
    }
  }
  auto bytes = torch::from_blob(idx.data.data(), {idx.dims[0]}, torch::kUInt8);
  return bytes.to(torch::kInt64);
}

}  // namespace

FashionMnist::FashionMnist(const std::string& dir, Split split) {
  const std::string prefix = split == Split::kTrain ? "train" : "t10k";
  const std::string images_path = find_file(dir, prefix + "-images-idx3-ubyte");
  const std::string labels_path = find_file(dir, prefix + "-labels-idx1-ubyte");
  images_ = read_images(images_path);
  labels_ = read_labels(labels_path);
  if (images_.size(0) != labels_.size(0)) {
    throw std::runtime_error(images_path + " has " + std::to_string(images_.size(0)) + " images but " + labels_path +
                             " has " + std::to_string(labels_.size(0)) + " labels");
  }
}

}  // namespace chorus_examples
