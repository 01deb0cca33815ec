// The C ABI's grouped allgather and reducescatter: every member is checked
// before any is enqueued; a member's bad input refuses the whole group
// through negotiation (Runtime::refuse_group_async), so the other ranks'
// groups fail too instead of waiting.
#include <string>
#include <vector>

#include "c_api/c_arguments.h"
#include "c_api/c_guard.h"
#include "c_api/c_handles.h"

namespace {

using chorus::detail::fail;

// The members as the core takes them, or a failure code with the message set.
struct Members {
  std::vector<std::string> names;
  std::vector<std::shared_ptr<chorus::Tensor>> inputs;
  std::vector<chorus::OpHooks> hooks;  // one per member: its user_data's allocation context
  chorus::Status refused;              // a member's bad input: the group is refused through negotiation
};

int check_members(const char* function, int process_set_id, int count, const char* const* names,
                  const void* const* inputs, const int64_t* const* shapes, const int* ndims,
                  const chorus_dtype* dtypes, chorus_alloc_fn alloc, void* const* user_data, int64_t* handles,
                  Members* out) {
  const std::string what = std::string(function) + ": ";
  if (count < 1) return fail(CHORUS_ERR_INVALID_ARGUMENT, what + "count " + std::to_string(count) + " is below 1");
  if (!names || !inputs || !shapes || !ndims || !dtypes || !handles) {
    return fail(CHORUS_ERR_INVALID_ARGUMENT, what + "names, inputs, shapes, ndims, dtypes and handles must not be NULL");
  }
  for (int i = 0; i < count; ++i) {
    if (names[i] == nullptr) return fail(CHORUS_ERR_INVALID_ARGUMENT, what + "member " + std::to_string(i) + ": name is NULL");
    out->names.push_back(names[i]);
  }
  const chorus::OpHooks in_set = chorus::detail::in_set(process_set_id);
  for (int i = 0; i < count && out->refused.is_ok(); ++i) {
    std::shared_ptr<chorus::HostTensorView> tensor;
    chorus::OpHooks hooks = in_set;
    const std::string member = std::string(function) + " member " + std::to_string(i) + "('" + names[i] + "'): ";
    out->refused = chorus::detail::shaped_tensor(member, inputs[i], shapes[i], ndims[i], dtypes[i], alloc,
                                                 user_data ? user_data[i] : nullptr, &tensor, &hooks);
    out->inputs.push_back(tensor);
    out->hooks.push_back(std::move(hooks));
  }
  return CHORUS_OK;
}

void store_handles(const std::vector<chorus::Handle>& enqueued, int64_t* handles) {
  for (size_t i = 0; i < enqueued.size(); ++i) handles[i] = chorus::detail::handles().add(enqueued[i]);
}

// A member's bad input, negotiated: the other ranks' groups fail too.
int refuse_group(chorus::Collective kind, const Members& m, const chorus::Status& why, int process_set_id,
                 int64_t* handles) {
  const chorus::ProcessSet set = chorus::detail::in_set(process_set_id).process_set;
  store_handles(chorus::current_runtime()->refuse_group_async(kind, m.names, why.message(), set), handles);
  return CHORUS_OK;
}

}  // namespace

extern "C" {

int chorus_grouped_allgather_async(int process_set_id, int count, const char* const* names, const void* const* inputs,
                                   const int64_t* const* shapes, const int* ndims, const chorus_dtype* dtypes,
                                   chorus_alloc_fn alloc, void* const* user_data, int64_t* handles) {
  return chorus::detail::guarded([&]() -> int {
    Members m;
    const int rc = check_members("chorus_grouped_allgather_async", process_set_id, count, names, inputs, shapes, ndims,
                                 dtypes, alloc, user_data, handles, &m);
    if (rc != CHORUS_OK) return rc;
    if (!m.refused.is_ok()) return refuse_group(chorus::Collective::kAllgather, m, m.refused, process_set_id, handles);
    store_handles(chorus::current_runtime()->grouped_allgather_async(m.names, m.inputs, m.hooks), handles);
    return CHORUS_OK;
  });
}

int chorus_grouped_reducescatter_async(int process_set_id, int count, const char* const* names,
                                       const void* const* inputs, const int64_t* const* shapes, const int* ndims,
                                       const chorus_dtype* dtypes, chorus_reduce_op op, double prescale,
                                       double postscale, chorus_alloc_fn alloc, void* const* user_data, int64_t* handles) {
  return chorus::detail::guarded([&]() -> int {
    const char* function = "chorus_grouped_reducescatter_async";
    Members m;
    const int rc = check_members(function, process_set_id, count, names, inputs, shapes, ndims, dtypes, alloc,
                                 user_data, handles, &m);
    if (rc != CHORUS_OK) return rc;
    if (m.refused.is_ok()) m.refused = chorus::detail::check_reduce_op(op, std::string(function) + ": ");
    if (!m.refused.is_ok()) return refuse_group(chorus::Collective::kReducescatter, m, m.refused, process_set_id, handles);
    chorus::AllreduceOptions options;
    options.op = static_cast<chorus::ReduceOp>(op);
    options.prescale_factor = prescale;
    options.postscale_factor = postscale;
    store_handles(chorus::current_runtime()->grouped_reducescatter_async(m.names, m.inputs, options, m.hooks), handles);
    return CHORUS_OK;
  });
}

}  // extern "C"
