// The C ABI's allreduces that carry their tensors' shapes (ABI 13): one
// tensor on the host or a device, and a grouped call on the host. The ranks
// agree on every dimension, not only on the count, as Horovod's do.
#include <string>
#include <vector>

#include "c_api/c_arguments.h"
#include "c_api/c_guard.h"
#include "c_api/c_handles.h"
#include "chorus/c_api.h"
#include "chorus/chorus.h"

namespace {

using chorus::Status;
using namespace chorus::detail;  // fail, guarded, handles, in_set, refuse_call, the argument checks

// The shape of `ndim` dimensions, or why it is refused.
Status shape_of(const std::string& what, const int64_t* shape, int ndim, chorus::TensorShape* out) {
  if (ndim < 0) return Status::invalid_argument(what + "ndim " + std::to_string(ndim) + " is negative");
  if (ndim > 0 && shape == nullptr) return Status::invalid_argument(what + "shape is NULL");
  std::vector<int64_t> dims(shape, shape + ndim);
  for (int64_t d : dims) {
    if (d < 0) return Status::invalid_argument(what + "a dimension of " + std::to_string(d) + " is negative");
  }
  *out = chorus::TensorShape(dims);
  return Status::ok();
}

// A tensor view over `data`: host memory, or device memory on `device`.
std::shared_ptr<chorus::Tensor> view(const void* data, chorus_dtype dtype, const chorus::TensorShape& shape, int device,
                                     void* stream) {
  const auto dt = static_cast<chorus::DataType>(dtype);
  if (device < 0) return std::make_shared<chorus::HostTensorView>(const_cast<void*>(data), dt, shape);
  return std::make_shared<chorus::DeviceTensorView>(const_cast<void*>(data), dt, shape, device, stream);
}

// The members of a grouped allreduce, as the core takes them.
struct Members {
  std::vector<std::string> names;
  std::vector<std::shared_ptr<chorus::Tensor>> inputs, outputs;
  Status refused;
};

int check_members(int count, const char* const* names, const void* const* inputs, void* const* outputs,
                  const int64_t* const* shapes, const int* ndims, const chorus_dtype* dtypes, chorus_reduce_op op,
                  int64_t* handles_out, Members* out) {
  const std::string what = "chorus_grouped_allreduce_async: ";
  if (count < 1) return fail(CHORUS_ERR_INVALID_ARGUMENT, what + "count " + std::to_string(count) + " is below 1");
  if (!names || !inputs || !outputs || !shapes || !ndims || !dtypes || !handles_out) {
    return fail(CHORUS_ERR_INVALID_ARGUMENT,
                what + "names, inputs, outputs, shapes, ndims, dtypes and handles must not be NULL");
  }
  for (int i = 0; i < count; ++i) {
    if (names[i] == nullptr) return fail(CHORUS_ERR_INVALID_ARGUMENT, what + "member " + std::to_string(i) + ": name is NULL");
    out->names.push_back(names[i]);
  }
  for (int i = 0; i < count && out->refused.is_ok(); ++i) {
    const std::string member = "chorus_grouped_allreduce_async member " + std::to_string(i) + "('" + names[i] + "'): ";
    chorus::TensorShape shape;
    out->refused = shape_of(member, shapes[i], ndims[i], &shape);
    if (out->refused.is_ok()) {
      out->refused = check_allreduce_arguments(member, inputs[i], outputs[i], shape.num_elements(), dtypes[i], op);
    }
    if (!out->refused.is_ok()) break;
    out->inputs.push_back(view(inputs[i], dtypes[i], shape, -1, nullptr));
    out->outputs.push_back(inputs[i] == outputs[i] ? out->inputs.back() : view(outputs[i], dtypes[i], shape, -1, nullptr));
  }
  return CHORUS_OK;
}

}  // namespace

extern "C" {

int chorus_allreduce_shaped_async(int process_set_id, const char* name, const void* input, void* output,
                                  const int64_t* shape, int ndim, chorus_dtype dtype, chorus_reduce_op op,
                                  double prescale, double postscale, int device, void* stream, int64_t* handle) {
  return guarded([&]() -> int {
    if (name == nullptr) return fail(CHORUS_ERR_INVALID_ARGUMENT, "chorus_allreduce_shaped_async: name is NULL");
    const std::string what = std::string("chorus_allreduce_shaped_async('") + name + "'): ";
    if (handle == nullptr) return fail(CHORUS_ERR_INVALID_ARGUMENT, what + "handle is NULL");
    const chorus::OpHooks hooks = in_set(process_set_id);
    chorus::TensorShape dims;
    Status s = shape_of(what, shape, ndim, &dims);
    if (s.is_ok()) s = check_allreduce_arguments(what, input, output, dims.num_elements(), dtype, op);
    if (!s.is_ok()) return refuse_call(chorus::Collective::kAllreduce, name, s, hooks, handle);
    auto in = view(input, dtype, dims, device, stream);
    auto out = input == output ? in : view(output, dtype, dims, device, stream);
    *handle = handles().add(
        chorus::current_runtime()->allreduce_async(name, in, out, reduction(op, prescale, postscale), hooks));
    return CHORUS_OK;
  });
}

int chorus_grouped_allreduce_async(int process_set_id, int count, const char* const* names, const void* const* inputs,
                                   void* const* outputs, const int64_t* const* shapes, const int* ndims,
                                   const chorus_dtype* dtypes, chorus_reduce_op op, double prescale, double postscale,
                                   int64_t* handles_out) {
  return guarded([&]() -> int {
    Members m;
    const int rc = check_members(count, names, inputs, outputs, shapes, ndims, dtypes, op, handles_out, &m);
    if (rc != CHORUS_OK) return rc;
    const chorus::ProcessSet set = in_set(process_set_id).process_set;
    const std::vector<chorus::Handle> enqueued =
        m.refused.is_ok()
            ? chorus::current_runtime()->grouped_allreduce_async(m.names, m.inputs, m.outputs,
                                                                 reduction(op, prescale, postscale), set)
            : chorus::current_runtime()->refuse_group_async(chorus::Collective::kAllreduce, m.names,
                                                            m.refused.message(), set);
    for (size_t i = 0; i < enqueued.size(); ++i) handles_out[i] = handles().add(enqueued[i]);
    return CHORUS_OK;
  });
}

}  // extern "C"
