#include "chorus/torch/compression.h"

#include <torch/torch.h>

#include "chorus/error.h"

namespace chorus {

namespace {

class NoCompression final : public Compression {
 public:
  torch::Tensor compress(const torch::Tensor& tensor, torch::Dtype* original_dtype) const override {
    *original_dtype = tensor.scalar_type();
    return tensor;
  }
  torch::Tensor decompress(const torch::Tensor& tensor, torch::Dtype) const override { return tensor; }
  const char* name() const override { return "none"; }
};

// Floating tensors wider than `wire` travel as `wire`; the rest as they are.
class CastCompression final : public Compression {
 public:
  CastCompression(torch::Dtype wire, const char* name) : wire_(wire), name_(name) {}
  torch::Tensor compress(const torch::Tensor& tensor, torch::Dtype* original_dtype) const override {
    *original_dtype = tensor.scalar_type();
    const bool wider = tensor.is_floating_point() && tensor.element_size() > 2;
    return wider ? tensor.to(wire_) : tensor;
  }
  torch::Tensor decompress(const torch::Tensor& tensor, torch::Dtype original_dtype) const override {
    return tensor.scalar_type() == original_dtype ? tensor : tensor.to(original_dtype);
  }
  const char* name() const override { return name_; }

 private:
  torch::Dtype wire_;
  const char* name_;
};

}  // namespace

std::shared_ptr<Compression> Compression::none() {
  static const auto instance = std::make_shared<NoCompression>();
  return instance;
}

std::shared_ptr<Compression> Compression::fp16() {
  static const auto instance = std::make_shared<CastCompression>(torch::kFloat16, "fp16");
  return instance;
}

std::shared_ptr<Compression> Compression::bf16() {
  static const auto instance = std::make_shared<CastCompression>(torch::kBFloat16, "bf16");
  return instance;
}

std::shared_ptr<Compression> Compression::from_name(const std::string& name) {
  if (name == "none") return none();
  if (name == "fp16") return fp16();
  if (name == "bf16") return bf16();
  throw InvalidArgumentError(
      Status::invalid_argument("unknown compression '" + name + "' (expected none, fp16 or bf16)"));
}

}  // namespace chorus
