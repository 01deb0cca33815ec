#include "engine/output_slot.h"

#include <new>

namespace chorus::detail {

OutputSlot allocate_output(const TensorEntry& e, const TensorShape& shape, const Logger& logger) {
  OutputSlot slot;
  std::shared_ptr<OpContext> context = e.hooks.context;
  if (!context) context = std::make_shared<HostOpContext>();
  try {  // adapters may throw (a framework's out-of-memory error)
    slot.alloc = context->allocate_output(shape, e.request.dtype, &slot.tensor);
  } catch (const std::exception& ex) {
    slot.alloc = Status::unknown_error(ex.what());
  }
  if (slot.alloc.is_ok() && (!slot.tensor || slot.tensor->shape().num_elements() != shape.num_elements() ||
                             slot.tensor->dtype() != e.request.dtype)) {
    slot.alloc = Status::unknown_error("the adapter's OpContext returned a tensor of the wrong size or dtype");
  }
  if (!slot.alloc.is_ok()) {
    slot.alloc = Status(slot.alloc.code(), "allocating the output " + shape.to_string() + " failed: " + slot.alloc.message());
    const size_t bytes = static_cast<size_t>(shape.num_elements() * dtype_size(e.request.dtype)) + 1;
    slot.scratch.reset(new (std::nothrow) char[bytes]);  // not zeroed: it is only written to
    if (!slot.scratch) {
      logger.fatal(std::string(collective_name(e.request.type)) + " of tensor '" + e.name() + "': " +
                   slot.alloc.message() + ", and no memory is left to take part in it");
    }
  }
  return slot;
}

TensorShape with_rows(int64_t rows, const std::vector<int64_t>& shape, int64_t* row_elems) {
  TensorShape out;
  out.add_dim(rows);
  *row_elems = 1;
  for (size_t i = 1; i < shape.size(); ++i) {
    out.add_dim(shape[i]);
    *row_elems *= shape[i];
  }
  return out;
}

}  // namespace chorus::detail
