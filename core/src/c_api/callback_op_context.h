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
class CallbackOpContext final : public chorus::OpContext {
 public:
  CallbackOpContext(chorus_alloc_fn alloc, void* user) : alloc_(alloc), user_(user) {}
  chorus::Status allocate_output(const chorus::TensorShape& shape, chorus::DataType dtype,
                                 std::shared_ptr<chorus::Tensor>* out) override {
    const int64_t bytes = shape.num_elements() * chorus::dtype_size(dtype);
    const std::vector<int64_t>& dims = shape.dim_sizes();
    void* p = alloc_(user_, bytes, dims.data(), shape.dims());
    if (p == nullptr && bytes > 0) {
      return chorus::Status::invalid_argument("the allocation callback returned NULL for " + std::to_string(bytes) +
                                              " bytes");
    }
    *out = std::make_shared<chorus::HostTensorView>(p, dtype, shape);
    return chorus::Status::ok();
  }
  chorus::Status allocate_zeros(const chorus::TensorShape& shape, chorus::DataType dtype,
                                std::shared_ptr<chorus::Tensor>* out) override {
    chorus::Status s = allocate_output(shape, dtype, out);
    if (s.is_ok() && (*out)->size_bytes() > 0) std::memset((*out)->mutable_data(), 0, static_cast<size_t>((*out)->size_bytes()));
    return s;
  }

 private:
  chorus_alloc_fn alloc_;
  void* user_;
};

}  // namespace chorus::detail
