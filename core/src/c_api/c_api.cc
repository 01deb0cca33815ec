// The C ABI over the C++ API. Every entry point catches everything: no
// exception may cross extern "C". Handles are integers mapped to
// chorus::Handle in a table; chorus_wait releases them.
#include "chorus/c_api.h"

#include <cstring>
#include <mutex>
#include <vector>
#include <string>
#include <unordered_map>

#include "chorus/elastic.h"
#include "c_api/c_arguments.h"
#include "c_api/c_guard.h"
#include "c_api/c_handles.h"
#include "c_api/callback_op_context.h"
#include "chorus/chorus.h"

namespace {

using chorus::Status;
using chorus::detail::check_allreduce_arguments;
using chorus::detail::check_buffer_arguments;
using chorus::detail::check_collective;
using chorus::detail::check_dtype;
using chorus::detail::check_reduce_op;
using chorus::detail::check_splits_arguments;
using chorus::detail::CallbackOpContext;
using chorus::detail::fail;
using chorus::detail::guarded;
using chorus::detail::handles;
using chorus::detail::in_set;
using chorus::detail::last_error;
using chorus::detail::refuse_call;


}  // namespace

namespace chorus::detail {

HandleTable& handles() {
  static HandleTable* table = new HandleTable();  // leaked: outlives static destructors
  return *table;
}

chorus::OpHooks in_set(int process_set_id) {
  chorus::OpHooks hooks;
  hooks.process_set = chorus::current_runtime()->process_set(process_set_id);
  return hooks;
}

int refuse_call(chorus::Collective kind, const char* name, const Status& why, const chorus::OpHooks& hooks,
                int64_t* handle) {
  *handle = handles().add(chorus::current_runtime()->refuse_async(kind, name, why.message(), hooks));
  return CHORUS_OK;
}

Status shaped_tensor(const std::string& what, const void* input, const int64_t* shape, int ndim, chorus_dtype dtype,
                     chorus_alloc_fn alloc, void* user_data, std::shared_ptr<chorus::HostTensorView>* tensor,
                     chorus::OpHooks* hooks) {
  if (alloc == nullptr) return Status::invalid_argument(what + "the allocation callback is NULL");
  if (ndim < 1 || shape == nullptr) return Status::invalid_argument(what + "needs a shape of at least one dimension");
  if (Status s = check_dtype(dtype, what); !s.is_ok()) return s;
  chorus::TensorShape s(std::vector<int64_t>(shape, shape + ndim));
  if (s.num_elements() > 0 && input == nullptr) return Status::invalid_argument(what + "input is NULL");
  *tensor = std::make_shared<chorus::HostTensorView>(const_cast<void*>(input), static_cast<chorus::DataType>(dtype), s);
  hooks->context = std::make_shared<CallbackOpContext>(alloc, user_data);
  return Status::ok();
}

int check_shaped_call(chorus::Collective kind, const char* function, const char* name, const void* input,
                      const int64_t* shape, int ndim, chorus_dtype dtype, chorus_alloc_fn alloc, int64_t* handle,
                      std::shared_ptr<chorus::HostTensorView>* tensor, chorus::OpHooks* hooks, void* user_data) {
  if (name == nullptr) return fail(CHORUS_ERR_INVALID_ARGUMENT, std::string(function) + ": name is NULL");
  const std::string what = std::string(function) + "('" + name + "'): ";
  if (handle == nullptr) return fail(CHORUS_ERR_INVALID_ARGUMENT, what + "handle is NULL");
  Status s = shaped_tensor(what, input, shape, ndim, dtype, alloc, user_data, tensor, hooks);
  return s.is_ok() ? CHORUS_OK : refuse_call(kind, name, s, *hooks, handle);
}

}  // namespace chorus::detail

namespace {

using chorus::detail::check_shaped_call;

template <class Getter>
int topology_value(Getter&& get) {
  return guarded([&]() -> int { return get(); });
}

}  // namespace

extern "C" {

int chorus_init(void) {
  return guarded([]() -> int {
    chorus::init();
    return CHORUS_OK;
  });
}

int chorus_shutdown(void) {
  return guarded([]() -> int {
    chorus::shutdown();
    return CHORUS_OK;
  });
}

int chorus_is_initialized(void) {
  return guarded([]() -> int { return chorus::is_initialized() ? 1 : 0; });
}

int chorus_is_running(void) {
  return guarded([]() -> int { return chorus::is_running() ? 1 : 0; });
}

int chorus_rank(void) { return topology_value([] { return chorus::rank(); }); }
int chorus_size(void) { return topology_value([] { return chorus::size(); }); }
int chorus_local_rank(void) { return topology_value([] { return chorus::local_rank(); }); }
int chorus_local_size(void) { return topology_value([] { return chorus::local_size(); }); }
int chorus_cross_rank(void) { return topology_value([] { return chorus::cross_rank(); }); }
int chorus_cross_size(void) { return topology_value([] { return chorus::cross_size(); }); }
int chorus_is_homogeneous(void) { return topology_value([] { return chorus::is_homogeneous() ? 1 : 0; }); }
int chorus_mpi_built(void) { return chorus::mpi_built() ? 1 : 0; }
int chorus_cuda_built(void) { return chorus::cuda_built() ? 1 : 0; }
int chorus_nccl_built(void) { return chorus::nccl_built(); }
int chorus_mpi_enabled(void) { return chorus::mpi_enabled() ? 1 : 0; }
int chorus_tcp_enabled(void) { return chorus::tcp_enabled() ? 1 : 0; }

int chorus_elastic_enabled(void) { return chorus::elastic::enabled() ? 1 : 0; }

int chorus_elastic_host_updates(int64_t* generation, int* kinds) {
  return guarded([&]() -> int {
    if (!generation || !kinds) {
      throw chorus::InvalidArgumentError(
          chorus::Status::invalid_argument("chorus_elastic_host_updates: generation and kinds must not be NULL"));
    }
    const chorus::elastic::HostUpdates u = chorus::elastic::host_updates();
    *generation = u.generation;
    *kinds = u.kinds;
    return CHORUS_OK;
  });
}

int chorus_allreduce_async(const char* name, const void* input, void* output, int64_t count,
                           chorus_dtype dtype, chorus_reduce_op op, double prescale,
                           double postscale, int64_t* handle) {
  return chorus_allreduce_async_in_set(0, name, input, output, count, dtype, op, prescale, postscale, handle);
}

int chorus_allreduce_async_in_set(int process_set_id, const char* name, const void* input, void* output,
                                  int64_t count, chorus_dtype dtype, chorus_reduce_op op, double prescale,
                                  double postscale, int64_t* handle) {
  return guarded([&]() -> int {
    if (name == nullptr) return fail(CHORUS_ERR_INVALID_ARGUMENT, "chorus_allreduce_async: name is NULL");
    const std::string what = std::string("chorus_allreduce_async('") + name + "'): ";
    if (handle == nullptr) return fail(CHORUS_ERR_INVALID_ARGUMENT, what + "handle is NULL");
    if (Status s = check_allreduce_arguments(what, input, output, count, dtype, op); !s.is_ok()) {
      return refuse_call(chorus::Collective::kAllreduce, name, s, in_set(process_set_id), handle);
    }
    const auto dt = static_cast<chorus::DataType>(dtype);
    auto in = std::make_shared<chorus::HostTensorView>(const_cast<void*>(input), dt, chorus::TensorShape{count});
    auto out = input == output ? in : std::make_shared<chorus::HostTensorView>(output, dt, chorus::TensorShape{count});
    chorus::AllreduceOptions options;
    options.op = static_cast<chorus::ReduceOp>(op);
    options.prescale_factor = prescale;
    options.postscale_factor = postscale;
    *handle = handles().add(chorus::current_runtime()->allreduce_async(name, in, out, options, in_set(process_set_id)));
    return CHORUS_OK;
  });
}

int chorus_broadcast_async(const char* name, void* buffer, int64_t count, chorus_dtype dtype,
                           int root_rank, int64_t* handle) {
  return chorus_broadcast_async_in_set(0, name, buffer, count, dtype, root_rank, handle);
}

int chorus_broadcast_async_in_set(int process_set_id, const char* name, void* buffer, int64_t count,
                                  chorus_dtype dtype, int root_rank, int64_t* handle) {
  return guarded([&]() -> int {
    if (name == nullptr) return fail(CHORUS_ERR_INVALID_ARGUMENT, "chorus_broadcast_async: name is NULL");
    const std::string what = std::string("chorus_broadcast_async('") + name + "'): ";
    if (handle == nullptr) return fail(CHORUS_ERR_INVALID_ARGUMENT, what + "handle is NULL");
    if (Status s = check_buffer_arguments(what, buffer, count, dtype); !s.is_ok()) {
      return refuse_call(chorus::Collective::kBroadcast, name, s, in_set(process_set_id), handle);
    }
    auto t = std::make_shared<chorus::HostTensorView>(buffer, static_cast<chorus::DataType>(dtype), chorus::TensorShape{count});
    *handle = handles().add(chorus::current_runtime()->broadcast_async(name, t, root_rank, in_set(process_set_id)));
    return CHORUS_OK;
  });
}


int chorus_allgather_async(const char* name, const void* input, const int64_t* shape, int ndim,
                           chorus_dtype dtype, chorus_alloc_fn alloc, void* user_data, int64_t* handle) {
  return chorus_allgather_async_in_set(0, name, input, shape, ndim, dtype, alloc, user_data, handle);
}

int chorus_allgather_async_in_set(int process_set_id, const char* name, const void* input, const int64_t* shape,
                                  int ndim, chorus_dtype dtype, chorus_alloc_fn alloc, void* user_data,
                                  int64_t* handle) {
  return guarded([&]() -> int {
    std::shared_ptr<chorus::HostTensorView> in;
    chorus::OpHooks hooks = in_set(process_set_id);
    const int rc = check_shaped_call(chorus::Collective::kAllgather, "chorus_allgather_async", name, input, shape, ndim,
                                     dtype, alloc, handle, &in, &hooks, user_data);
    if (rc != CHORUS_OK || !in) return rc;  // no tensor: refused, negotiated
    *handle = handles().add(chorus::current_runtime()->allgather_async(name, in, hooks));
    return CHORUS_OK;
  });
}

int chorus_reducescatter_async(const char* name, const void* input, const int64_t* shape, int ndim,
                               chorus_dtype dtype, chorus_reduce_op op, double prescale, double postscale,
                               chorus_alloc_fn alloc, void* user_data, int64_t* handle) {
  return chorus_reducescatter_async_in_set(0, name, input, shape, ndim, dtype, op, prescale, postscale, alloc,
                                           user_data, handle);
}

int chorus_reducescatter_async_in_set(int process_set_id, const char* name, const void* input,
                                      const int64_t* shape, int ndim, chorus_dtype dtype, chorus_reduce_op op,
                                      double prescale, double postscale, chorus_alloc_fn alloc, void* user_data,
                                      int64_t* handle) {
  return guarded([&]() -> int {
    std::shared_ptr<chorus::HostTensorView> in;
    chorus::OpHooks hooks = in_set(process_set_id);
    const int rc = check_shaped_call(chorus::Collective::kReducescatter, "chorus_reducescatter_async", name, input,
                                     shape, ndim, dtype, alloc, handle, &in, &hooks, user_data);
    if (rc != CHORUS_OK || !in) return rc;  // no tensor: refused, negotiated
    if (Status s = check_reduce_op(op, std::string("chorus_reducescatter_async('") + name + "'): "); !s.is_ok()) {
      return refuse_call(chorus::Collective::kReducescatter, name, s, hooks, handle);
    }
    chorus::AllreduceOptions options;
    options.op = static_cast<chorus::ReduceOp>(op);
    options.prescale_factor = prescale;
    options.postscale_factor = postscale;
    *handle = handles().add(chorus::current_runtime()->reducescatter_async(name, in, options, hooks));
    return CHORUS_OK;
  });
}

int chorus_alltoall_async(const char* name, const void* input, const int64_t* shape, int ndim, chorus_dtype dtype,
                          const int64_t* splits, int nsplits, chorus_alloc_fn alloc, void* user_data,
                          int64_t* handle) {
  return chorus_alltoall_async_in_set(0, name, input, shape, ndim, dtype, splits, nsplits, alloc, user_data, handle);
}

int chorus_alltoall_async_in_set(int process_set_id, const char* name, const void* input, const int64_t* shape,
                                 int ndim, chorus_dtype dtype, const int64_t* splits, int nsplits,
                                 chorus_alloc_fn alloc, void* user_data, int64_t* handle) {
  return guarded([&]() -> int {
    std::shared_ptr<chorus::HostTensorView> in;
    chorus::OpHooks hooks = in_set(process_set_id);
    const int rc = check_shaped_call(chorus::Collective::kAlltoall, "chorus_alltoall_async", name, input, shape, ndim,
                                     dtype, alloc, handle, &in, &hooks, user_data);
    if (rc != CHORUS_OK || !in) return rc;  // no tensor: refused, negotiated
    const Status bad = check_splits_arguments(std::string("chorus_alltoall_async('") + name + "'): ", splits, nsplits);
    if (!bad.is_ok()) return refuse_call(chorus::Collective::kAlltoall, name, bad, hooks, handle);
    std::vector<int64_t> s = splits ? std::vector<int64_t>(splits, splits + nsplits) : std::vector<int64_t>{};
    *handle = handles().add(chorus::current_runtime()->alltoall_async(name, in, std::move(s), hooks));
    return CHORUS_OK;
  });
}

int chorus_barrier(void) { return chorus_barrier_in_set(0); }

int chorus_barrier_in_set(int process_set_id) {
  return guarded([&]() -> int {
    chorus::barrier(chorus::current_runtime()->process_set(process_set_id));
    return CHORUS_OK;
  });
}

int chorus_start_timeline(const char* path, int mark_cycles) {
  return guarded([&]() -> int {
    if (path == nullptr) throw chorus::InvalidArgumentError(chorus::Status::invalid_argument("start_timeline: path is null"));
    chorus::start_timeline(path, mark_cycles != 0);
    return CHORUS_OK;
  });
}

int chorus_stop_timeline(void) {
  return guarded([]() -> int { return chorus::stop_timeline() ? 1 : 0; });
}

int chorus_join(void) {
  return guarded([]() -> int { return chorus::join(); });
}

int chorus_add_process_set(const int* ranks, int nranks) {
  return guarded([&]() -> int {
    // Registration is collective: bad arguments here still take part, as a
    // rank list every rank's check refuses (-1 is no rank), so the others
    // fail with this rank named instead of waiting for it.
    if (nranks < 0 || (nranks > 0 && ranks == nullptr)) {
      try {
        chorus::add_process_set({-1});
      } catch (const chorus::Error& e) {
        return fail(CHORUS_ERR_INVALID_ARGUMENT, std::string("chorus_add_process_set: ranks is NULL or nranks is "
                                                             "negative (") + e.what() + ")");
      }
      return fail(CHORUS_ERR_INTERNAL, "chorus_add_process_set: the refused registration did not fail");
    }
    return chorus::add_process_set(std::vector<int>(ranks, ranks + nranks)).id();
  });
}

int chorus_remove_process_set(int process_set_id) {
  return guarded([&]() -> int {
    chorus::remove_process_set(chorus::current_runtime()->process_set(process_set_id));
    return CHORUS_OK;
  });
}

int chorus_process_set_rank(int process_set_id) {
  return guarded([&]() -> int {
    const chorus::ProcessSet set = chorus::current_runtime()->process_set(process_set_id);
    const int r = set.rank_of(chorus::rank());
    if (r < 0) {
      return fail(CHORUS_ERR_INVALID_ARGUMENT, "chorus_process_set_rank: rank " + std::to_string(chorus::rank()) +
                                                   " is not a member of process set " + std::to_string(process_set_id));
    }
    return r;
  });
}

int chorus_process_set_size(int process_set_id) {
  return guarded([&]() -> int {
    const chorus::ProcessSet set = chorus::current_runtime()->process_set(process_set_id);
    return set.size();
  });
}

int chorus_refuse_async(int process_set_id, chorus_collective kind, const char* name, const char* why,
                        int64_t* handle) {
  return guarded([&]() -> int {
    if (name == nullptr || why == nullptr || handle == nullptr) {
      return fail(CHORUS_ERR_INVALID_ARGUMENT, "chorus_refuse_async: name, why and handle must not be NULL");
    }
    if (Status s = check_collective(kind, "chorus_refuse_async: "); !s.is_ok()) return fail(s);
    return refuse_call(static_cast<chorus::Collective>(kind), name, Status::invalid_argument(why),
                       in_set(process_set_id), handle);
  });
}

int chorus_refuse_group_async(int process_set_id, chorus_collective kind, int count, const char* const* names,
                              const char* why, int64_t* handles_out) {
  return guarded([&]() -> int {
    const std::string what = "chorus_refuse_group_async: ";
    if (count < 1) return fail(CHORUS_ERR_INVALID_ARGUMENT, what + "count " + std::to_string(count) + " is below 1");
    if (names == nullptr || why == nullptr || handles_out == nullptr) {
      return fail(CHORUS_ERR_INVALID_ARGUMENT, what + "names, why and handles must not be NULL");
    }
    if (Status s = check_collective(kind, what); !s.is_ok()) return fail(s);
    std::vector<std::string> member_names;
    for (int i = 0; i < count; ++i) {
      if (names[i] == nullptr) return fail(CHORUS_ERR_INVALID_ARGUMENT, what + "names[" + std::to_string(i) + "] is NULL");
      member_names.push_back(names[i]);
    }
    const chorus::ProcessSet set = in_set(process_set_id).process_set;
    const std::vector<chorus::Handle> refused =
        chorus::current_runtime()->refuse_group_async(static_cast<chorus::Collective>(kind), member_names, why, set);
    for (size_t i = 0; i < refused.size(); ++i) handles_out[i] = handles().add(refused[i]);
    return CHORUS_OK;
  });
}

const char* chorus_last_error(void) { return last_error.c_str(); }

int chorus_abi_version(void) { return CHORUS_ABI_VERSION; }

}  // extern "C"
