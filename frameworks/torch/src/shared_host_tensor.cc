#include "chorus/torch/shared_host_tensor.h"

#include <memory>
#include <string>

#include "chorus/chorus.h"

namespace chorus {

torch::Tensor empty_shared_host(at::IntArrayRef sizes, const torch::TensorOptions& options) {
  if (options.has_device() && !options.device().is_cpu()) {
    throw InvalidArgumentError(Status::invalid_argument("empty_shared_host: shared host memory is CPU memory, not " +
                                                        options.device().str()));
  }
  int64_t numel = 1;
  for (int64_t s : sizes) {
    if (s < 0) {
      throw InvalidArgumentError(Status::invalid_argument("empty_shared_host: negative size " + std::to_string(s)));
    }
    numel *= s;
  }
  const int64_t bytes = numel * static_cast<int64_t>(c10::elementSize(c10::typeMetaToScalarType(options.dtype())));
  std::shared_ptr<void> memory = allocate_shared_host(bytes);
  void* data = memory.get();
  // The deleter holds the memory until torch frees the storage.
  return torch::from_blob(data, sizes, [memory](void*) mutable { memory.reset(); }, options.device(torch::kCPU));
}

}  // namespace chorus
