// Host-memory implementations of the adapter contract (chorus/tensor.h).
#include <cstring>
#include <vector>

#include "chorus/tensor.h"

namespace chorus {

namespace {

class OwnedHostTensor final : public Tensor {
 public:
  OwnedHostTensor(DataType dtype, TensorShape shape)
      : dtype_(dtype), shape_(std::move(shape)),
        storage_(static_cast<size_t>(shape_.num_elements() * dtype_size(dtype))) {}
  DataType dtype() const override { return dtype_; }
  TensorShape shape() const override { return shape_; }
  const void* data() const override { return storage_.data(); }
  void* mutable_data() override { return storage_.data(); }
  int64_t size_bytes() const override { return static_cast<int64_t>(storage_.size()); }

 private:
  DataType dtype_;
  TensorShape shape_;
  std::vector<unsigned char> storage_;  // value-initialized: zeros
};

Status check_shape(const TensorShape& shape) {
  for (int64_t d : shape.dim_sizes()) {
    if (d < 0) return Status::invalid_argument("cannot allocate a tensor of shape " + shape.to_string());
  }
  return Status::ok();
}

}  // namespace

Status HostOpContext::allocate_output(const TensorShape& shape, DataType dtype,
                                      std::shared_ptr<Tensor>* out) {
  Status s = check_shape(shape);
  if (s.is_ok()) *out = std::make_shared<OwnedHostTensor>(dtype, shape);
  return s;
}

Status HostOpContext::allocate_zeros(const TensorShape& shape, DataType dtype,
                                     std::shared_ptr<Tensor>* out) {
  return allocate_output(shape, dtype, out);  // OwnedHostTensor starts zeroed
}

}  // namespace chorus
