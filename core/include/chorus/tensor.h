#pragma once
/// \file tensor.h
/// The adapter contract: what a framework implements so Chorus can move its
/// tensors without knowing the framework. See docs/adapters.md.
///
/// The core never allocates framework memory itself; it asks the adapter's
/// OpContext. A tensor on a CUDA device (device() >= 0) names the stream its
/// producer wrote it on (stream()); Chorus orders its own device work after
/// that point without blocking any host thread. A build without GPU support
/// refuses such a tensor at enqueue, naming it.

#include <cstdint>
#include <memory>

#include "chorus/export.h"
#include "chorus/status.h"
#include "chorus/types.h"

namespace chorus {

/// A framework tensor as the core sees it: typed, shaped, contiguous memory.
/// Implementations must keep the memory alive for as long as the object lives.
class CHORUS_API Tensor {
 public:
  virtual ~Tensor() = default;
  virtual DataType dtype() const = 0;
  virtual TensorShape shape() const = 0;
  /// Start of the contiguous element storage.
  virtual const void* data() const = 0;
  /// Writable view of the same storage (outputs, in-place inputs).
  virtual void* mutable_data() = 0;
  /// Size in bytes (elements x element size).
  virtual int64_t size_bytes() const = 0;
  /// Device that holds the memory: kCpuDevice for host memory, else the
  /// CUDA device index (data() is then a device pointer).
  virtual int device() const { return kCpuDevice; }
  /// CUDA tensors: the cudaStream_t (as void*) the producer wrote this
  /// tensor on; nullptr is the legacy default stream. At enqueue, on the
  /// calling thread, Chorus records an event on it (the tensor's ready
  /// point) and its own device work waits on that event on the device:
  /// never a host-side synchronize. The producer may keep queueing work on
  /// the stream; only what was queued before the enqueue is waited for.
  /// Ignored for host tensors.
  virtual void* stream() const { return nullptr; }
};

/// Per-operation services the adapter provides: allocation in the
/// framework's allocator, on the tensor's device.
class CHORUS_API OpContext {
 public:
  virtual ~OpContext() = default;
  /// Allocate the output of an operation whose shape is known only after
  /// negotiation (allgather, alltoall). On success `*out` holds the tensor.
  virtual Status allocate_output(const TensorShape& shape, DataType dtype,
                                 std::shared_ptr<Tensor>* out) = 0;
  /// Allocate a zero-filled tensor (a joined rank's stand-in contribution).
  virtual Status allocate_zeros(const TensorShape& shape, DataType dtype,
                                std::shared_ptr<Tensor>* out) = 0;
};

/// A Tensor over memory the caller owns (the C ABI, tests, simple adapters).
/// The caller keeps the memory alive until the operation completes.
class CHORUS_API HostTensorView final : public Tensor {
 public:
  HostTensorView(void* data, DataType dtype, TensorShape shape)
      : data_(data), dtype_(dtype), shape_(std::move(shape)) {}
  DataType dtype() const override { return dtype_; }
  TensorShape shape() const override { return shape_; }
  const void* data() const override { return data_; }
  void* mutable_data() override { return data_; }
  int64_t size_bytes() const override { return shape_.num_elements() * dtype_size(dtype_); }

 private:
  void* data_;
  DataType dtype_;
  TensorShape shape_;
};

/// A Tensor over device memory the caller owns (the C ABI, tests): `data`
/// on CUDA device `device`, written by work queued on `stream` (a
/// cudaStream_t; nullptr: the default stream). The caller keeps the memory
/// alive until the operation completes.
class CHORUS_API DeviceTensorView final : public Tensor {
 public:
  DeviceTensorView(void* data, DataType dtype, TensorShape shape, int device, void* stream)
      : data_(data), dtype_(dtype), shape_(std::move(shape)), device_(device), stream_(stream) {}
  DataType dtype() const override { return dtype_; }
  TensorShape shape() const override { return shape_; }
  const void* data() const override { return data_; }
  void* mutable_data() override { return data_; }
  int64_t size_bytes() const override { return shape_.num_elements() * dtype_size(dtype_); }
  int device() const override { return device_; }
  void* stream() const override { return stream_; }

 private:
  void* data_;
  DataType dtype_;
  TensorShape shape_;
  int device_;
  void* stream_;
};

/// An OpContext that allocates host memory the tensor itself owns.
class CHORUS_API HostOpContext final : public OpContext {
 public:
  Status allocate_output(const TensorShape& shape, DataType dtype,
                         std::shared_ptr<Tensor>* out) override;
  Status allocate_zeros(const TensorShape& shape, DataType dtype,
                        std::shared_ptr<Tensor>* out) override;
};

}  // namespace chorus
