#pragma once
/// \file compression.h
/// Gradient compression for allreduce: a tensor is compressed before it goes
/// on the wire and decompressed when it comes back (Horovod's Compression).

#include <memory>

#include <torch/types.h>

namespace chorus {

/// Compresses tensors before a collective and restores them afterwards.
/// Implementations must be stateless across tensors (one instance serves
/// every parameter) and thread-safe.
class Compression {
 public:
  virtual ~Compression() = default;
  /// The tensor to send; `*original_dtype` receives what decompress() needs
  /// to restore the result.
  virtual torch::Tensor compress(const torch::Tensor& tensor, torch::Dtype* original_dtype) const = 0;
  /// The received tensor back in `original_dtype`.
  virtual torch::Tensor decompress(const torch::Tensor& tensor, torch::Dtype original_dtype) const = 0;
  /// "none", "fp16", "bf16": for logs and error messages.
  virtual const char* name() const = 0;

  /// Sends tensors as they are.
  static std::shared_ptr<Compression> none();
  /// Sends floating tensors wider than 16 bits as float16 (others as they are).
  static std::shared_ptr<Compression> fp16();
  /// Sends floating tensors wider than 16 bits as bfloat16 (others as they are).
  static std::shared_ptr<Compression> bf16();
  /// none(), fp16() or bf16() by name; throws chorus::InvalidArgumentError otherwise.
  static std::shared_ptr<Compression> from_name(const std::string& name);
};

}  // namespace chorus
