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

// What every device entry point checks first; "" when fine, else the message.
std::string call_problem(const std::string& what, int device, int64_t* handle) {
  if (handle == nullptr) return what + "handle is NULL";
  if (device < 0) {
    return what + "device " + std::to_string(device) +
           " is not a CUDA device index (host memory goes through the functions without _on_device)";
  }
  return "";
}

std::string described(const char* function, const char* name) {
  return std::string(function) + "('" + (name ? name : "") + "'): ";
}

// A shaped device input with outputs from `alloc` on the same device.
int shaped_input(const char* function, const char* name, const void* input, const int64_t* shape, int ndim,
                 chorus_dtype dtype, int device, void* stream, chorus_alloc_fn alloc, void* user_data,
                 int64_t* handle, std::shared_ptr<chorus::Tensor>* tensor, chorus::OpHooks* hooks) {
  const std::string what = described(function, name);
  if (name == nullptr) return fail(CHORUS_ERR_INVALID_ARGUMENT, what + "name is NULL");
  if (std::string p = call_problem(what, device, handle); !p.empty()) return fail(CHORUS_ERR_INVALID_ARGUMENT, p);
  if (alloc == nullptr) return fail(CHORUS_ERR_INVALID_ARGUMENT, what + "the allocation callback is NULL");
  if (ndim < 1 || shape == nullptr) return fail(CHORUS_ERR_INVALID_ARGUMENT, what + "needs a shape of at least one dimension");
  if (Status s = check_dtype(dtype, what); !s.is_ok()) return fail(s);
  chorus::TensorShape s(std::vector<int64_t>(shape, shape + ndim));
  if (s.num_elements() > 0 && input == nullptr) return fail(CHORUS_ERR_INVALID_ARGUMENT, what + "input is NULL");
  *tensor = std::make_shared<chorus::DeviceTensorView>(const_cast<void*>(input), static_cast<chorus::DataType>(dtype),
                                                       s, device, stream);
  hooks->context = std::make_shared<CallbackOpContext>(alloc, user_data, device);
  return CHORUS_OK;
}

chorus::AllreduceOptions reduction(chorus_reduce_op op, double prescale, double postscale) {
  chorus::AllreduceOptions options;
  options.op = static_cast<chorus::ReduceOp>(op);
  options.prescale_factor = prescale;
  options.postscale_factor = postscale;
  return options;
}

}  // namespace

extern "C" {

int chorus_allreduce_async_on_device(int process_set_id, const char* name, const void* input, void* output,
                                     int64_t count, chorus_dtype dtype, chorus_reduce_op op, double prescale,
                                     double postscale, int device, void* stream, int64_t* handle) {
  return guarded([&]() -> int {
    const std::string what = described("chorus_allreduce_async_on_device", name);
    if (name == nullptr) return fail(CHORUS_ERR_INVALID_ARGUMENT, what + "name is NULL");
    if (std::string p = call_problem(what, device, handle); !p.empty()) return fail(CHORUS_ERR_INVALID_ARGUMENT, p);
    if (Status s = check_allreduce_arguments(what, input, output, count, dtype, op); !s.is_ok()) return fail(s);
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
    if (name == nullptr) return fail(CHORUS_ERR_INVALID_ARGUMENT, what + "name is NULL");
    if (std::string p = call_problem(what, device, handle); !p.empty()) return fail(CHORUS_ERR_INVALID_ARGUMENT, p);
    if (count < 0) return fail(CHORUS_ERR_INVALID_ARGUMENT, what + "count " + std::to_string(count) + " is negative");
    if (count > 0 && buffer == nullptr) return fail(CHORUS_ERR_INVALID_ARGUMENT, what + "buffer is NULL");
    if (Status s = check_dtype(dtype, what); !s.is_ok()) return fail(s);
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
    const int rc = shaped_input("chorus_allgather_async_on_device", name, input, shape, ndim, dtype, device, stream,
                                alloc, user_data, handle, &in, &hooks);
    if (rc != CHORUS_OK) return rc;
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
    const int rc = shaped_input("chorus_reducescatter_async_on_device", name, input, shape, ndim, dtype, device,
                                stream, alloc, user_data, handle, &in, &hooks);
    if (rc != CHORUS_OK) return rc;
    const std::string what = described("chorus_reducescatter_async_on_device", name);
    if (Status s = check_reduce_op(op, what); !s.is_ok()) return fail(s);
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
    const int rc = shaped_input("chorus_alltoall_async_on_device", name, input, shape, ndim, dtype, device, stream,
                                alloc, user_data, handle, &in, &hooks);
    if (rc != CHORUS_OK) return rc;
    if (splits == nullptr && nsplits != 0) {
      return fail(CHORUS_ERR_INVALID_ARGUMENT, described("chorus_alltoall_async_on_device", name) + "splits is NULL");
    }
    std::vector<int64_t> s = splits ? std::vector<int64_t>(splits, splits + nsplits) : std::vector<int64_t>{};
    *handle = handles().add(chorus::current_runtime()->alltoall_async(name, in, std::move(s), hooks));
    return CHORUS_OK;
  });
}

}  // extern "C"
