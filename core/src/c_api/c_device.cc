// The C ABI's entry points for device buffers (chorus_*_on_device, ABI 6):
// the same collectives as c_api.cc over DeviceTensorView, whose stream
// gives the buffers' ready point. Whether the build and the machine can run
// them is the runtime's check at enqueue (a clear error naming the tensor).
#include <string>
#include <vector>

#include "c_api/c_arguments.h"
#include "c_api/c_guard.h"
#include "c_api/c_handles.h"
#include "c_api/callback_op_context.h"
#include "chorus/c_api.h"
#include "chorus/chorus.h"

namespace {

using chorus::Status;
using namespace chorus::detail;  // fail, guarded, handles, in_set, the argument checks

// The device index, one rank's own argument: a bad one is refused through
// negotiation (refuse_call), like bad input.
Status check_device(const std::string& what, int device) {
  if (device >= 0) return Status::ok();
  return Status::invalid_argument(what + "device " + std::to_string(device) +
                                  " is not a CUDA device index (host memory goes through the functions without _on_device)");
}

// What no call can be made without: a name and somewhere to put the handle.
int check_call(const std::string& what, const char* name, int64_t* handle) {
  if (name == nullptr) return fail(CHORUS_ERR_INVALID_ARGUMENT, what + "name is NULL");
  if (handle == nullptr) return fail(CHORUS_ERR_INVALID_ARGUMENT, what + "handle is NULL");
  return CHORUS_OK;
}

std::string described(const char* function, const char* name) {
  return std::string(function) + "('" + (name ? name : "") + "'): ";
}

// A shaped device input with outputs from `alloc` on the same device. Bad
// input is refused through negotiation: 0 with `tensor` left empty and
// *handle set (check_shaped_call in c_handles.h).
int shaped_input(chorus::Collective kind, const char* function, const char* name, const void* input,
                 const int64_t* shape, int ndim, chorus_dtype dtype, int device, void* stream, chorus_alloc_fn alloc,
                 void* user_data, int64_t* handle, std::shared_ptr<chorus::Tensor>* tensor, chorus::OpHooks* hooks) {
  const std::string what = described(function, name);
  if (int rc = check_call(what, name, handle); rc != CHORUS_OK) return rc;
  auto refused = [&](const Status& s) { return refuse_call(kind, name, s, *hooks, handle); };
  if (Status s = check_device(what, device); !s.is_ok()) return refused(s);
  if (alloc == nullptr) return refused(Status::invalid_argument(what + "the allocation callback is NULL"));
  if (ndim < 1 || shape == nullptr) {
    return refused(Status::invalid_argument(what + "needs a shape of at least one dimension"));
  }
  if (Status s = check_dtype(dtype, what); !s.is_ok()) return refused(s);
  chorus::TensorShape s(std::vector<int64_t>(shape, shape + ndim));
  if (s.num_elements() > 0 && input == nullptr) return refused(Status::invalid_argument(what + "input is NULL"));
  *tensor = std::make_shared<chorus::DeviceTensorView>(const_cast<void*>(input), static_cast<chorus::DataType>(dtype),
                                                       s, device, stream);
  hooks->context = std::make_shared<CallbackOpContext>(alloc, user_data, device);
  return CHORUS_OK;
}

}  // namespace

extern "C" {

int chorus_allreduce_async_on_device(int process_set_id, const char* name, const void* input, void* output,
                                     int64_t count, chorus_dtype dtype, chorus_reduce_op op, double prescale,
                                     double postscale, int device, void* stream, int64_t* handle) {
  return guarded([&]() -> int {
    const std::string what = described("chorus_allreduce_async_on_device", name);
    if (int rc = check_call(what, name, handle); rc != CHORUS_OK) return rc;
    Status s = check_device(what, device);
    if (s.is_ok()) s = check_allreduce_arguments(what, input, output, count, dtype, op);
    if (!s.is_ok()) return refuse_call(chorus::Collective::kAllreduce, name, s, in_set(process_set_id), handle);
    const auto dt = static_cast<chorus::DataType>(dtype);
    std::shared_ptr<chorus::Tensor> in = std::make_shared<chorus::DeviceTensorView>(
        const_cast<void*>(input), dt, chorus::TensorShape{count}, device, stream);
    std::shared_ptr<chorus::Tensor> out =
        input == output ? in
                        : std::make_shared<chorus::DeviceTensorView>(output, dt, chorus::TensorShape{count}, device, stream);
    *handle = handles().add(chorus::current_runtime()->allreduce_async(
        name, in, out, reduction(op, prescale, postscale), in_set(process_set_id)));
    return CHORUS_OK;
  });
}

int chorus_broadcast_async_on_device(int process_set_id, const char* name, void* buffer, int64_t count,
                                     chorus_dtype dtype, int root_rank, int device, void* stream, int64_t* handle) {
  return guarded([&]() -> int {
    const std::string what = described("chorus_broadcast_async_on_device", name);
    if (int rc = check_call(what, name, handle); rc != CHORUS_OK) return rc;
    Status s = check_device(what, device);
    if (s.is_ok()) s = check_buffer_arguments(what, buffer, count, dtype);
    if (!s.is_ok()) return refuse_call(chorus::Collective::kBroadcast, name, s, in_set(process_set_id), handle);
    auto t = std::make_shared<chorus::DeviceTensorView>(buffer, static_cast<chorus::DataType>(dtype),
                                                        chorus::TensorShape{count}, device, stream);
    *handle = handles().add(chorus::current_runtime()->broadcast_async(name, t, root_rank, in_set(process_set_id)));
    return CHORUS_OK;
  });
}

int chorus_allgather_async_on_device(int process_set_id, const char* name, const void* input, const int64_t* shape,
                                     int ndim, chorus_dtype dtype, int device, void* stream, chorus_alloc_fn alloc,
                                     void* user_data, int64_t* handle) {
  return guarded([&]() -> int {
    std::shared_ptr<chorus::Tensor> in;
    chorus::OpHooks hooks = in_set(process_set_id);
    const int rc = shaped_input(chorus::Collective::kAllgather, "chorus_allgather_async_on_device", name, input, shape,
                                ndim, dtype, device, stream, alloc, user_data, handle, &in, &hooks);
    if (rc != CHORUS_OK || !in) return rc;  // no tensor: refused, negotiated
    *handle = handles().add(chorus::current_runtime()->allgather_async(name, in, hooks));
    return CHORUS_OK;
  });
}

int chorus_reducescatter_async_on_device(int process_set_id, const char* name, const void* input,
                                         const int64_t* shape, int ndim, chorus_dtype dtype, chorus_reduce_op op,
                                         double prescale, double postscale, int device, void* stream,
                                         chorus_alloc_fn alloc, void* user_data, int64_t* handle) {
  return guarded([&]() -> int {
    std::shared_ptr<chorus::Tensor> in;
    chorus::OpHooks hooks = in_set(process_set_id);
    const int rc = shaped_input(chorus::Collective::kReducescatter, "chorus_reducescatter_async_on_device", name, input,
                                shape, ndim, dtype, device, stream, alloc, user_data, handle, &in, &hooks);
    if (rc != CHORUS_OK || !in) return rc;  // no tensor: refused, negotiated
    const std::string what = described("chorus_reducescatter_async_on_device", name);
    if (Status s = check_reduce_op(op, what); !s.is_ok()) {
      return refuse_call(chorus::Collective::kReducescatter, name, s, hooks, handle);
    }
    *handle = handles().add(
        chorus::current_runtime()->reducescatter_async(name, in, reduction(op, prescale, postscale), hooks));
    return CHORUS_OK;
  });
}

int chorus_alltoall_async_on_device(int process_set_id, const char* name, const void* input, const int64_t* shape,
                                    int ndim, chorus_dtype dtype, const int64_t* splits, int nsplits, int device,
                                    void* stream, chorus_alloc_fn alloc, void* user_data, int64_t* handle) {
  return guarded([&]() -> int {
    std::shared_ptr<chorus::Tensor> in;
    chorus::OpHooks hooks = in_set(process_set_id);
    const int rc = shaped_input(chorus::Collective::kAlltoall, "chorus_alltoall_async_on_device", name, input, shape,
                                ndim, dtype, device, stream, alloc, user_data, handle, &in, &hooks);
    if (rc != CHORUS_OK || !in) return rc;  // no tensor: refused, negotiated
    const Status bad = check_splits_arguments(described("chorus_alltoall_async_on_device", name), splits, nsplits);
    if (!bad.is_ok()) return refuse_call(chorus::Collective::kAlltoall, name, bad, hooks, handle);
    std::vector<int64_t> s = splits ? std::vector<int64_t>(splits, splits + nsplits) : std::vector<int64_t>{};
    *handle = handles().add(chorus::current_runtime()->alltoall_async(name, in, std::move(s), hooks));
    return CHORUS_OK;
  });
}

}  // extern "C"
