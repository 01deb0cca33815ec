#pragma once
// The OpContext behind the C ABI's collectives whose output size is known
// only once the ranks agreed (allgather, reducescatter, alltoall): it asks
// the caller's chorus_alloc_fn for the memory.

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "chorus/c_api.h"
#include "chorus/chorus.h"

namespace chorus::detail {

// OpContext over a C allocation callback: the memory belongs to the caller.
// `device` >= 0: the callback allocates on that CUDA device.
class CallbackOpContext final : public chorus::OpContext {
 public:
  CallbackOpContext(chorus_alloc_fn alloc, void* user, int device = chorus::kCpuDevice)
      : alloc_(alloc), user_(user), device_(device) {}
  chorus::Status allocate_output(const chorus::TensorShape& shape, chorus::DataType dtype,
                                 std::shared_ptr<chorus::Tensor>* out) override {
    const int64_t bytes = shape.num_elements() * chorus::dtype_size(dtype);
    const std::vector<int64_t>& dims = shape.dim_sizes();
    void* p = alloc_(user_, bytes, dims.data(), shape.dims());
    if (p == nullptr && bytes > 0) {
      return chorus::Status::invalid_argument("the allocation callback returned NULL for " + std::to_string(bytes) +
                                              " bytes");
    }
    if (device_ == chorus::kCpuDevice) {
      *out = std::make_shared<chorus::HostTensorView>(p, dtype, shape);
    } else {
      *out = std::make_shared<chorus::DeviceTensorView>(p, dtype, shape, device_, nullptr);
    }
    return chorus::Status::ok();
  }
  // Host memory only: a joined rank's zeros (CPU allreduces only).
  chorus::Status allocate_zeros(const chorus::TensorShape& shape, chorus::DataType dtype,
                                std::shared_ptr<chorus::Tensor>* out) override {
    if (device_ != chorus::kCpuDevice) return chorus::Status::internal("zeros asked of a device allocation callback");
    chorus::Status s = allocate_output(shape, dtype, out);
    if (s.is_ok() && (*out)->size_bytes() > 0) std::memset((*out)->mutable_data(), 0, static_cast<size_t>((*out)->size_bytes()));
    return s;
  }

 private:
  chorus_alloc_fn alloc_;
  void* user_;
  int device_;
};

}  // namespace chorus::detail
