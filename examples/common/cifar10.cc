#include "cifar10.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace chorus_examples {
namespace {

constexpr int64_t kClasses = 10;

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw std::runtime_error(path + ": cannot open: " + std::strerror(errno));
  const std::streamsize size = in.tellg();
  if (size < 0) throw std::runtime_error(path + ": cannot read (not a regular file?)");
  std::vector<uint8_t> bytes(static_cast<size_t>(size));
  in.seekg(0);
  if (!in.read(reinterpret_cast<char*>(bytes.data()), size)) throw std::runtime_error(path + ": read error");
  return bytes;
}

// One file's records as [n, 3073] bytes, checked.
torch::Tensor read_records(const std::string& path) {
  std::vector<uint8_t> bytes = read_file(path);
  const int64_t size = static_cast<int64_t>(bytes.size());
  if (size == 0) throw std::runtime_error(path + ": empty file, expected CIFAR-10 records");
  if (size % Cifar10::kRecordBytes != 0) {
    throw std::runtime_error(path + ": truncated: " + std::to_string(size) + " bytes is not a whole number of " +
                             std::to_string(Cifar10::kRecordBytes) +
                             "-byte records (1 label byte + 3072 pixel bytes); the last record has only " +
                             std::to_string(size % Cifar10::kRecordBytes) + " bytes");
  }
  const int64_t n = size / Cifar10::kRecordBytes;
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t label = bytes[static_cast<size_t>(i * Cifar10::kRecordBytes)];
    if (label >= kClasses) {
      throw std::runtime_error(path + ": record " + std::to_string(i) + " has label " + std::to_string(label) +
                               ", not a class 0..9 (is this the CIFAR-10 binary version?)");
    }
  }
  // clone(): the tensor must own its bytes once `bytes` goes away.
  return torch::from_blob(bytes.data(), {n, Cifar10::kRecordBytes}, torch::kUInt8).clone();
}

}  // namespace

std::vector<std::string> Cifar10::files(const std::string& dir, Split split) {
  if (split == Split::kTest) return {dir + "/test_batch.bin"};
  std::vector<std::string> paths;
  for (int i = 1; i <= 5; ++i) paths.push_back(dir + "/data_batch_" + std::to_string(i) + ".bin");
  return paths;
}

Cifar10::Cifar10(const std::string& dir, Split split) : Cifar10(files(dir, split)) {}

Cifar10::Cifar10(const std::vector<std::string>& paths) {
  if (paths.empty()) throw std::invalid_argument("Cifar10: no files given");
  std::vector<torch::Tensor> parts;
  for (const auto& path : paths) parts.push_back(read_records(path));
  const torch::Tensor records = torch::cat(parts);
  labels_ = records.select(1, 0).to(torch::kInt64);
  const auto mean = torch::tensor({0.4914, 0.4822, 0.4465}, torch::kFloat32).view({1, 3, 1, 1});
  const auto std = torch::tensor({0.2470, 0.2435, 0.2616}, torch::kFloat32).view({1, 3, 1, 1});
  images_ = records.slice(1, 1).reshape({-1, 3, 32, 32}).to(torch::kFloat32).div_(255.0).sub_(mean).div_(std);
}

}  // namespace chorus_examples
