#include "collective_kernels.h"

#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "chorus_functions.h"
#include "kernel_call.h"
#include "unnamed_calls.h"

namespace chorus::tf {

using adapter::chorus_functions;
using adapter::ChorusFunctions;

namespace {

const CApi& api() { return tensorflow_c_api().api; }

// What a kernel read from its node's attributes. An empty name is named
// at run time, in the order the calls run (eager execution), so eager
// calls do not each make a kernel of their own.
struct Kernel {
  std::vector<std::string> names;
  int64_t reduce_op = CHORUS_SUM;
  float prescale = 1, postscale = 1;
  int64_t root_rank = 0;
  int64_t process_set = 0;
};

// "<kind>.tf.noname.<n>", one counter per process set, as the Python
// package's unnamed calls ("allreduce.noname.<n>").
std::string auto_name(const char* kind, int64_t process_set) {
  const int64_t n = adapter::next_unnamed_call(process_set);
  std::string name = std::string(kind) + ".tf.noname.";
  if (process_set != 0) name += "set" + std::to_string(process_set) + ".";
  return name + std::to_string(n);
}

int chorus_type_of(int tf_type) {
  switch (tf_type) {
    case kTfUint8: return CHORUS_UINT8;
    case kTfInt8: return CHORUS_INT8;
    case kTfInt16: return CHORUS_INT16;
    case kTfInt32: return CHORUS_INT32;
    case kTfInt64: return CHORUS_INT64;
    case kTfHalf: return CHORUS_FLOAT16;
    case kTfBfloat16: return CHORUS_BFLOAT16;
    case kTfFloat: return CHORUS_FLOAT32;
    case kTfDouble: return CHORUS_FLOAT64;
    case kTfBool: return CHORUS_BOOL;
    default: return -1;
  }
}

// ---- Attributes ----

bool read_names(TF_OpKernelConstruction* ctx, Kernel* k) {
  TfStatus status;
  int32_t count = 0, total = 0;
  api().TF_OpKernelConstruction_GetAttrSize(ctx, "names", &count, &total, status.get());
  if (!status.ok()) return false;
  std::vector<char*> values(static_cast<size_t>(count));
  std::vector<size_t> lengths(static_cast<size_t>(count));
  std::vector<char> storage(static_cast<size_t>(total) + 1);
  api().TF_OpKernelConstruction_GetAttrStringList(ctx, "names", values.data(), lengths.data(), count, storage.data(),
                                                  storage.size(), status.get());
  if (!status.ok()) return false;
  for (int32_t i = 0; i < count; ++i)
    k->names.emplace_back(values[static_cast<size_t>(i)], lengths[static_cast<size_t>(i)]);
  return true;
}

bool read_int(TF_OpKernelConstruction* ctx, const char* name, int64_t* value) {
  TfStatus status;
  api().TF_OpKernelConstruction_GetAttrInt64(ctx, name, value, status.get());
  return status.ok();
}

bool read_float(TF_OpKernelConstruction* ctx, const char* name, float* value) {
  TfStatus status;
  api().TF_OpKernelConstruction_GetAttrFloat(ctx, name, value, status.get());
  return status.ok();
}

void* failed_construction(TF_OpKernelConstruction* ctx, Kernel* k, const char* what) {
  delete k;
  TfStatus status;
  api().TF_SetStatus(status.get(), kTfInvalidArgument, what);
  api().TF_OpKernelConstruction_Failure(ctx, status.get());
  return nullptr;
}

// ---- Per call ----

struct Input {
  void* data = nullptr;
  std::vector<int64_t> shape;
  int tf_type = 0;
  int chorus_type = -1;
  size_t bytes = 0;
};

// False (the kernel failed) when the ops were never bound to a libchorus.
bool bound(KernelCall& call) {
  if (chorus_functions() != nullptr) return true;
  call.fail(kTfFailedPrecondition,
            "Chorus's TensorFlow ops are not bound to libchorus: import chorus.tensorflow before running them");
  return false;
}

bool read_input(KernelCall* call, int i, Input* in) {
  TfStatus status;
  TF_Tensor* t = nullptr;
  api().TF_GetInput(call->context(), i, &t, status.get());
  if (!status.ok()) {
    call->fail(kTfInternal, status.message());
    return false;
  }
  call->hold(t);
  in->data = api().TF_TensorData(t);
  in->bytes = api().TF_TensorByteSize(t);
  in->tf_type = api().TF_TensorType(t);
  in->chorus_type = chorus_type_of(in->tf_type);
  const int ndim = api().TF_NumDims(t);
  for (int d = 0; d < ndim; ++d) in->shape.push_back(api().TF_Dim(t, d));
  if (in->chorus_type < 0) {
    call->fail(kTfInvalidArgument, "Chorus cannot carry TensorFlow dtype " + std::to_string(in->tf_type));
    return false;
  }
  return true;
}

bool read_inputs(KernelCall* call, int count, std::vector<Input>* inputs) {
  inputs->resize(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) {
    if (!read_input(call, i, &(*inputs)[static_cast<size_t>(i)])) return false;
  }
  return true;
}

// Output i, the shape of input `in`.
void* allocate_like(KernelCall* call, int i, const Input& in) {
  TfStatus status;
  TF_Tensor* t = api().TF_AllocateOutput(call->context(), i, in.tf_type, in.shape.data(),
                                         static_cast<int>(in.shape.size()), in.bytes, status.get());
  if (!status.ok()) {
    call->fail(kTfInternal, "allocating output " + std::to_string(i) + ": " + status.message());
    return nullptr;
  }
  call->hold(t);
  return api().TF_TensorData(t);
}

// chorus_alloc_fn: an output whose shape the negotiation decided.
void* allocate_negotiated(void* user_data, int64_t bytes, const int64_t* shape, int ndim) {
  static char empty;  // the address of a tensor with no bytes
  auto* slot = static_cast<OutputSlot*>(user_data);
  TfStatus status;
  TF_Tensor* t = api().TF_AllocateOutput(slot->call->context(), slot->index, slot->tf_type, shape, ndim,
                                         static_cast<size_t>(bytes), status.get());
  if (!status.ok()) return nullptr;
  slot->call->hold(t);
  void* data = api().TF_TensorData(t);
  return data != nullptr ? data : &empty;
}

std::vector<std::string> names_of(const Kernel& k, const char* kind, size_t count) {
  std::vector<std::string> names(count);
  for (size_t i = 0; i < count; ++i) {
    names[i] = i < k.names.size() && !k.names[i].empty() ? k.names[i] : auto_name(kind, k.process_set);
  }
  return names;
}

// The arrays a grouped C call takes.
struct Group {
  std::vector<std::string> names;
  std::vector<const char*> name_ptrs;
  std::vector<const void*> inputs;
  std::vector<const int64_t*> shapes;
  std::vector<int> ndims;
  std::vector<chorus_dtype> dtypes;
  std::vector<int64_t> handles;

  Group(const Kernel& k, const char* kind, const std::vector<Input>& in) : names(names_of(k, kind, in.size())) {
    for (size_t i = 0; i < in.size(); ++i) {
      name_ptrs.push_back(names[i].c_str());
      inputs.push_back(in[i].data);
      shapes.push_back(in[i].shape.data());
      ndims.push_back(static_cast<int>(in[i].shape.size()));
      dtypes.push_back(static_cast<chorus_dtype>(in[i].chorus_type));
    }
    handles.assign(in.size(), 0);
  }
};

// Output slots for a call's negotiated outputs, one per input.
std::vector<void*> slots_for(KernelCall* call, const std::vector<Input>& in) {
  std::vector<OutputSlot>& slots = call->output_slots();
  slots.reserve(in.size());
  std::vector<void*> user_data;
  for (size_t i = 0; i < in.size(); ++i) {
    slots.push_back({call, static_cast<int>(i), in[i].tf_type});
    user_data.push_back(&slots.back());
  }
  return user_data;
}

}  // namespace

// ---- Kernels ----

void* create_reduce_kernel(TF_OpKernelConstruction* ctx) {
  auto* k = new Kernel();
  if (!read_names(ctx, k) || !read_int(ctx, "reduce_op", &k->reduce_op) || !read_float(ctx, "prescale", &k->prescale) ||
      !read_float(ctx, "postscale", &k->postscale) || !read_int(ctx, "process_set", &k->process_set)) {
    return failed_construction(ctx, k, "a Chorus reduction op without its attributes");
  }
  return k;
}

void* create_gather_kernel(TF_OpKernelConstruction* ctx) {
  auto* k = new Kernel();
  if (!read_names(ctx, k) || !read_int(ctx, "process_set", &k->process_set)) {
    return failed_construction(ctx, k, "a Chorus gather op without its attributes");
  }
  return k;
}

void* create_broadcast_kernel(TF_OpKernelConstruction* ctx) {
  auto* k = new Kernel();
  if (!read_names(ctx, k) || !read_int(ctx, "root_rank", &k->root_rank) ||
      !read_int(ctx, "process_set", &k->process_set)) {
    return failed_construction(ctx, k, "a Chorus broadcast op without its attributes");
  }
  return k;
}

void* create_set_kernel(TF_OpKernelConstruction* ctx) {
  auto* k = new Kernel();
  if (!read_int(ctx, "process_set", &k->process_set)) {
    return failed_construction(ctx, k, "a Chorus barrier or join op without its process set");
  }
  return k;
}

void delete_kernel(void* kernel) { delete static_cast<Kernel*>(kernel); }

void compute_allreduce(void* kernel, TF_OpKernelContext* ctx) {
  const Kernel& k = *static_cast<Kernel*>(kernel);
  KernelCall call(ctx);
  std::vector<Input> in;
  if (!bound(call) || !read_inputs(&call, api().TF_NumInputs(ctx), &in)) return;
  std::vector<void*> outputs;
  for (size_t i = 0; i < in.size(); ++i) {
    outputs.push_back(allocate_like(&call, static_cast<int>(i), in[i]));
    if (outputs.back() == nullptr) return;
  }
  Group g(k, "allreduce", in);
  const auto op = static_cast<chorus_reduce_op>(k.reduce_op);
  const ChorusFunctions& c = *chorus_functions();
  const int rc = in.size() == 1
                     ? c.chorus_allreduce_shaped_async(static_cast<int>(k.process_set), g.name_ptrs[0], in[0].data,
                                                       outputs[0], g.shapes[0], g.ndims[0], g.dtypes[0], op, k.prescale,
                                                       k.postscale, -1, nullptr, g.handles.data())
                     : c.chorus_grouped_allreduce_async(static_cast<int>(k.process_set), static_cast<int>(in.size()),
                                                        g.name_ptrs.data(), g.inputs.data(), outputs.data(),
                                                        g.shapes.data(), g.ndims.data(), g.dtypes.data(), op,
                                                        k.prescale, k.postscale, g.handles.data());
  call.wait_for(rc, g.handles);
}

void compute_reducescatter(void* kernel, TF_OpKernelContext* ctx) {
  const Kernel& k = *static_cast<Kernel*>(kernel);
  KernelCall call(ctx);
  std::vector<Input> in;
  if (!bound(call) || !read_inputs(&call, api().TF_NumInputs(ctx), &in)) return;
  Group g(k, "reducescatter", in);
  std::vector<void*> user_data = slots_for(&call, in);
  const int rc = chorus_functions()->chorus_grouped_reducescatter_async(
      static_cast<int>(k.process_set), static_cast<int>(in.size()), g.name_ptrs.data(), g.inputs.data(),
      g.shapes.data(), g.ndims.data(), g.dtypes.data(), static_cast<chorus_reduce_op>(k.reduce_op), k.prescale,
      k.postscale, &allocate_negotiated, user_data.data(), g.handles.data());
  call.wait_for(rc, g.handles);
}

void compute_allgather(void* kernel, TF_OpKernelContext* ctx) {
  const Kernel& k = *static_cast<Kernel*>(kernel);
  KernelCall call(ctx);
  std::vector<Input> in;
  if (!bound(call) || !read_inputs(&call, api().TF_NumInputs(ctx), &in)) return;
  Group g(k, "allgather", in);
  std::vector<void*> user_data = slots_for(&call, in);
  const int rc = chorus_functions()->chorus_grouped_allgather_async(
      static_cast<int>(k.process_set), static_cast<int>(in.size()), g.name_ptrs.data(), g.inputs.data(),
      g.shapes.data(), g.ndims.data(), g.dtypes.data(), &allocate_negotiated, user_data.data(), g.handles.data());
  call.wait_for(rc, g.handles);
}

// Output 1 of an alltoall: how many rows arrived from each member.
void write_received_splits(KernelCall* call, int set, int64_t handle) {
  const ChorusFunctions& c = *chorus_functions();
  const int members = c.chorus_process_set_size(set);
  if (members <= 0) return;
  std::vector<int64_t> received(static_cast<size_t>(members));
  if (c.chorus_received_splits(handle, received.data(), members) < 0) return;  // failed: its wait says why
  const int64_t dims[1] = {members};
  TfStatus status;
  TF_Tensor* t =
      api().TF_AllocateOutput(call->context(), 1, kTfInt64, dims, 1, received.size() * sizeof(int64_t), status.get());
  if (!status.ok()) {
    call->fail(kTfInternal, "allocating alltoall's received splits: " + status.message());
    return;
  }
  std::memcpy(api().TF_TensorData(t), received.data(), received.size() * sizeof(int64_t));
  call->hold(t);
}

// Inputs: the tensor, its int64 splits. Outputs: what arrived, and how
// many rows from each member (read before the handle is released).
void compute_alltoall(void* kernel, TF_OpKernelContext* ctx) {
  const Kernel& k = *static_cast<Kernel*>(kernel);
  KernelCall call(ctx);
  std::vector<Input> in;
  if (!bound(call) || !read_inputs(&call, 2, &in)) return;
  if (in[1].tf_type != kTfInt64) {
    call.fail(kTfInvalidArgument, "alltoall: splits must be int64");
    return;
  }
  const std::vector<Input> tensor(1, in[0]);  // Group keeps pointers into it
  Group g(k, "alltoall", tensor);
  std::vector<void*> user_data = slots_for(&call, tensor);
  const int set = static_cast<int>(k.process_set);
  const int nsplits = in[1].shape.empty() ? 0 : static_cast<int>(in[1].shape[0]);
  const int rc = chorus_functions()->chorus_alltoall_async_in_set(
      set, g.name_ptrs[0], in[0].data, g.shapes[0], g.ndims[0], g.dtypes[0],
      nsplits == 0 ? nullptr : static_cast<const int64_t*>(in[1].data), nsplits, &allocate_negotiated, user_data[0],
      g.handles.data());
  call.wait_for(rc, g.handles, [&call, set](int64_t h) { write_received_splits(&call, set, h); });
}

// In place on the output, a copy of the input.
void compute_broadcast(void* kernel, TF_OpKernelContext* ctx) {
  const Kernel& k = *static_cast<Kernel*>(kernel);
  KernelCall call(ctx);
  std::vector<Input> in;
  if (!bound(call) || !read_inputs(&call, 1, &in)) return;
  void* out = allocate_like(&call, 0, in[0]);
  if (out == nullptr) return;
  if (in[0].bytes > 0) std::memcpy(out, in[0].data, in[0].bytes);
  const std::vector<std::string> names = names_of(k, "broadcast", 1);
  int64_t count = 1;
  for (int64_t d : in[0].shape) count *= d;
  std::vector<int64_t> handles(1, 0);
  const int rc = chorus_functions()->chorus_broadcast_async_in_set(
      static_cast<int>(k.process_set), names[0].c_str(), out, count, static_cast<chorus_dtype>(in[0].chorus_type),
      static_cast<int>(k.root_rank), handles.data());
  call.wait_for(rc, handles);
}

void compute_barrier(void* kernel, TF_OpKernelContext* ctx) {
  KernelCall call(ctx);
  if (!bound(call)) return;
  const ChorusFunctions& c = *chorus_functions();
  const int rc = c.chorus_barrier_in_set(static_cast<int>(static_cast<Kernel*>(kernel)->process_set));
  if (rc < 0) call.fail(KernelCall::code_of(rc), c.chorus_last_error());
}

void compute_join(void*, TF_OpKernelContext* ctx) {
  KernelCall call(ctx);
  if (!bound(call)) return;
  const ChorusFunctions& c = *chorus_functions();
  const int rc = c.chorus_join();
  if (rc < 0) {
    call.fail(KernelCall::code_of(rc), c.chorus_last_error());
    return;
  }
  TfStatus status;
  TF_Tensor* t = api().TF_AllocateOutput(ctx, 0, kTfInt32, nullptr, 0, sizeof(int32_t), status.get());
  if (!status.ok()) {
    call.fail(kTfInternal, status.message());
    return;
  }
  const int32_t last = rc;
  std::memcpy(api().TF_TensorData(t), &last, sizeof last);
  call.hold(t);
}

}  // namespace chorus::tf
