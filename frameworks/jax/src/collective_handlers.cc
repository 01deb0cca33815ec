// Chorus's XLA FFI handlers, one per collective, registered by chorus.jax as
// custom-call targets of XLA's CPU platform (chorus/jax/_ffi.py). Each
// reads its operands, results and attributes from the call frame, starts
// the collective through libchorus's C ABI and waits for it. A call traced
// with no name is named when it runs, in the order the calls run (the
// ordered effect chorus.jax gives them keeps that order equal on every
// rank): "jax.<kind>.<n>", one counter per process set.
#include <cstring>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "call_frame.h"
#include "chorus_functions.h"
#include "handler_call.h"
#include "unnamed_calls.h"

#define CHORUS_JAX_EXPORT __attribute__((visibility("default")))

namespace chorus::jax {

namespace {

using adapter::chorus_functions;
using adapter::ChorusFunctions;

std::string auto_name(const char* kind, int64_t process_set) {
  const int64_t n = adapter::next_unnamed_call(process_set);
  std::string name = std::string("jax.") + kind + ".";
  if (process_set != 0) name += "set" + std::to_string(process_set) + ".";
  return name + std::to_string(n);
}

// The operands of one (possibly grouped) call, as Chorus's grouped calls take them.
struct Members {
  std::vector<std::string> names;
  std::vector<const char*> name_ptrs;
  std::vector<const void*> inputs;
  std::vector<void*> outputs;
  std::vector<std::vector<int64_t>> shapes;
  std::vector<const int64_t*> shape_ptrs;
  std::vector<int> ndims;
  std::vector<chorus_dtype> dtypes;
  std::string unsupported;  // why a member cannot go, "" when all can
};

Members members_of(const CallFrame& frame, const char* kind, int64_t process_set) {
  Members m;
  const std::string given = frame.string_attr("name");
  const std::string base = given.empty() ? auto_name(kind, process_set) : given;
  const auto& operands = frame.operands();
  for (size_t i = 0; i < operands.size(); ++i) {
    const XLA_FFI_Buffer& b = *operands[i];
    m.names.push_back(operands.size() == 1 ? base : base + "." + std::to_string(i));
    m.inputs.push_back(b.data);
    m.shapes.push_back(shape_of(b));
    m.ndims.push_back(static_cast<int>(b.rank));
    const int type = chorus_type_of(b.dtype);
    if (type < 0 && m.unsupported.empty()) {
      m.unsupported = "chorus.jax: '" + m.names.back() + "' has XLA element type " + std::to_string(b.dtype) +
                      ", which Chorus does not carry";
    }
    m.dtypes.push_back(static_cast<chorus_dtype>(type < 0 ? 0 : type));
  }
  for (XLA_FFI_Buffer* r : frame.results()) m.outputs.push_back(r->data);
  for (const std::string& n : m.names) m.name_ptrs.push_back(n.c_str());
  for (const auto& s : m.shapes) m.shape_ptrs.push_back(s.data());
  return m;
}

// A member Chorus cannot carry fails the call on every rank, not only here.
XLA_FFI_Error* refuse(HandlerCall& call, const Members& m, chorus_collective kind, int64_t process_set) {
  std::vector<int64_t> handles(m.names.size());
  const int rc = chorus_functions()->chorus_refuse_group_async(static_cast<int>(process_set), kind,
                                                               static_cast<int>(m.names.size()), m.name_ptrs.data(),
                                                               m.unsupported.c_str(), handles.data());
  if (rc < 0) return call.failed(rc);
  return call.wait_all(handles);
}

XLA_FFI_Error* allreduce(const CallFrame& frame, HandlerCall& call) {
  const int64_t set = frame.int_attr("process_set", 0);
  Members m = members_of(frame, "allreduce", set);
  if (!m.unsupported.empty()) return refuse(call, m, CHORUS_COLLECTIVE_ALLREDUCE, set);
  const auto op = static_cast<chorus_reduce_op>(frame.int_attr("op", CHORUS_SUM));
  const double prescale = frame.float_attr("prescale", 1.0), postscale = frame.float_attr("postscale", 1.0);
  std::vector<int64_t> handles(m.names.size());
  const ChorusFunctions& c = *chorus_functions();
  const int rc =
      m.names.size() == 1  // one tensor: its errors name it alone, not a group
          ? c.chorus_allreduce_shaped_async(static_cast<int>(set), m.name_ptrs[0], m.inputs[0], m.outputs[0],
                                            m.shape_ptrs[0], m.ndims[0], m.dtypes[0], op, prescale, postscale, -1,
                                            nullptr, handles.data())
          : c.chorus_grouped_allreduce_async(static_cast<int>(set), static_cast<int>(m.names.size()),
                                             m.name_ptrs.data(), m.inputs.data(), m.outputs.data(), m.shape_ptrs.data(),
                                             m.ndims.data(), m.dtypes.data(), op, prescale, postscale, handles.data());
  return rc < 0 ? call.failed(rc) : call.wait_all(handles);
}

// Inside jit every rank's first dimensions must be the traced ones, equal
// on every rank. A result size alone cannot tell every rank (rows 1, 2, 3
// gathered fill the middle rank's traced 6), so an allgather carries one
// more member, each rank's rows, checked alike on every rank afterwards.
struct RowsCheck {
  std::vector<int64_t> mine, every;
  std::vector<int64_t> shape;
  ResultSlot slot;
  std::string name;
};

void add_rows_member(Members& m, RowsCheck& rows, int set_size, std::string* mismatch, std::mutex* mu) {
  for (const auto& s : m.shapes) rows.mine.push_back(s.empty() ? 0 : s[0]);
  rows.shape = {static_cast<int64_t>(rows.mine.size())};
  rows.every.assign(rows.mine.size() * static_cast<size_t>(set_size), 0);
  rows.name = m.names[0] + ".rows";
  rows.slot =
      ResultSlot{rows.every.data(), static_cast<int64_t>(rows.every.size() * sizeof(int64_t)), rows.name, mismatch, mu};
  m.name_ptrs.push_back(rows.name.c_str());
  m.inputs.push_back(rows.mine.data());
  m.shape_ptrs.push_back(rows.shape.data());
  m.ndims.push_back(1);
  m.dtypes.push_back(CHORUS_INT64);
}

// "" when every rank gathered the rows it traced, else why not (the same on every rank).
std::string unequal_rows(const Members& m, const RowsCheck& rows, int set_size) {
  const size_t n = rows.mine.size();
  for (size_t i = 0; i < n; ++i) {
    std::string each;
    bool equal = true;
    for (int r = 0; r < set_size; ++r) {
      const int64_t v = rows.every[static_cast<size_t>(r) * n + i];
      equal = equal && v == rows.every[i];
      each += (r ? ", " : "") + std::to_string(v);
    }
    if (!equal) {
      return "chorus.jax: allgather '" + m.names[i] + "' inside jax.jit: the ranks' first dimensions differ (" + each +
             " by rank), but a traced result's shape is fixed: inside jax.jit every rank's first "
             "dimension must be equal (outside jax.jit they may differ)";
    }
  }
  return "";
}

// Allgather and reducescatter: Chorus sizes the outputs; they go into the traced results.
XLA_FFI_Error* gather_or_scatter(const CallFrame& frame, HandlerCall& call, bool gather) {
  const int64_t set = frame.int_attr("process_set", 0);
  Members m = members_of(frame, gather ? "allgather" : "reducescatter", set);
  const chorus_collective kind = gather ? CHORUS_COLLECTIVE_ALLGATHER : CHORUS_COLLECTIVE_REDUCESCATTER;
  if (!m.unsupported.empty()) return refuse(call, m, kind, set);
  std::vector<ResultSlot>& slots = call.slots_for_results(m.names);
  std::vector<void*> user_data;
  for (ResultSlot& s : slots) user_data.push_back(&s);
  RowsCheck rows;
  const int set_size = chorus_functions()->chorus_process_set_size(static_cast<int>(set));
  if (gather) {
    if (set_size < 1) return call.failed(set_size);
    add_rows_member(m, rows, set_size, call.mismatch(), call.mutex());
    user_data.push_back(&rows.slot);
  }
  const ChorusFunctions& c = *chorus_functions();
  const int n = static_cast<int>(m.name_ptrs.size());
  std::vector<int64_t> handles(m.name_ptrs.size());
  const int rc =
      gather ? c.chorus_grouped_allgather_async(static_cast<int>(set), n, m.name_ptrs.data(), m.inputs.data(),
                                                m.shape_ptrs.data(), m.ndims.data(), m.dtypes.data(),
                                                &HandlerCall::place_result, user_data.data(), handles.data())
             : c.chorus_grouped_reducescatter_async(
                   static_cast<int>(set), n, m.name_ptrs.data(), m.inputs.data(), m.shape_ptrs.data(), m.ndims.data(),
                   m.dtypes.data(), static_cast<chorus_reduce_op>(frame.int_attr("op", CHORUS_SUM)),
                   frame.float_attr("prescale", 1.0), frame.float_attr("postscale", 1.0), &HandlerCall::place_result,
                   user_data.data(), handles.data());
  if (rc < 0) return call.failed(rc);
  if (!gather) return call.wait_all(handles);
  // The rows first: unequal rows are the same error on every rank, whatever
  // each rank's result size made of them.
  const int rows_rc = c.chorus_wait(handles.back());
  handles.pop_back();
  XLA_FFI_Error* error = call.wait_all(handles);
  const std::string unequal = rows_rc == 0 ? unequal_rows(m, rows, set_size) : "";
  if (unequal.empty()) return error;
  if (error != nullptr) call.destroy(error);
  return call.error(XLA_FFI_Error_Code_INVALID_ARGUMENT, unequal);
}

XLA_FFI_Error* allgather(const CallFrame& frame, HandlerCall& call) { return gather_or_scatter(frame, call, true); }
XLA_FFI_Error* reducescatter(const CallFrame& frame, HandlerCall& call) {
  return gather_or_scatter(frame, call, false);
}

// One member of a call that takes one tensor; refused on every rank if Chorus cannot carry it.
bool single_member(const CallFrame& frame, HandlerCall& call, const Members& m, chorus_collective kind, int64_t set,
                   XLA_FFI_Error** error) {
  if (m.names.size() != 1 || frame.results().size() != 1) {
    *error = call.error(XLA_FFI_Error_Code_INTERNAL,
                        "chorus.jax: a call of one tensor traced with " + std::to_string(m.names.size()) + " operands");
    return false;
  }
  if (!m.unsupported.empty()) {
    *error = refuse(call, m, kind, set);
    return false;
  }
  return true;
}

XLA_FFI_Error* broadcast(const CallFrame& frame, HandlerCall& call) {
  const int64_t set = frame.int_attr("process_set", 0);
  Members m = members_of(frame, "broadcast", set);
  XLA_FFI_Error* error = nullptr;
  if (!single_member(frame, call, m, CHORUS_COLLECTIVE_BROADCAST, set, &error)) return error;
  const XLA_FFI_Buffer& out = *frame.results()[0];
  const int64_t count = element_count(out);
  if (out.data != m.inputs[0]) std::memcpy(out.data, m.inputs[0], count * element_bytes(out.dtype));
  int64_t handle = 0;
  const int rc = chorus_functions()->chorus_broadcast_async_in_set(
      static_cast<int>(set), m.name_ptrs[0], out.data, count, m.dtypes[0],
      static_cast<int>(frame.int_attr("root_rank", 0)), &handle);
  return rc < 0 ? call.failed(rc) : call.wait_all({handle});
}

// Equal splits: each rank sends the same number of rows to every rank.
XLA_FFI_Error* alltoall(const CallFrame& frame, HandlerCall& call) {
  const int64_t set = frame.int_attr("process_set", 0);
  Members m = members_of(frame, "alltoall", set);
  XLA_FFI_Error* error = nullptr;
  if (!single_member(frame, call, m, CHORUS_COLLECTIVE_ALLTOALL, set, &error)) return error;
  std::vector<ResultSlot>& slots = call.slots_for_results(m.names);
  const ChorusFunctions& c = *chorus_functions();
  const int set_size = c.chorus_process_set_size(static_cast<int>(set));
  if (set_size < 1) return call.failed(set_size);
  int64_t handle = 0;
  const int rc =
      c.chorus_alltoall_async_in_set(static_cast<int>(set), m.name_ptrs[0], m.inputs[0], m.shape_ptrs[0], m.ndims[0],
                                     m.dtypes[0], nullptr, 0, &HandlerCall::place_result, &slots[0], &handle);
  if (rc < 0) return call.failed(rc);
  // Every rank checks the rows each rank sent it against its own traced
  // split, so unequal first dimensions fail every rank alike.
  std::vector<int64_t> received(static_cast<size_t>(set_size), 0);
  const bool known = c.chorus_wait_completed(handle, 1e9) == 1 &&
                     c.chorus_received_splits(handle, received.data(), set_size) == set_size;
  error = call.wait_all({handle});
  const int64_t split = m.shapes[0].empty() ? 0 : m.shapes[0][0] / set_size;
  std::string each;
  bool equal = true;
  for (int r = 0; r < set_size; ++r) {
    equal = equal && received[static_cast<size_t>(r)] == split;
    each += (r ? ", " : "") + std::to_string(received[static_cast<size_t>(r)] * set_size);
  }
  if (!known || equal) return error;
  if (error != nullptr) call.destroy(error);
  return call.error(XLA_FFI_Error_Code_INVALID_ARGUMENT,
                    "chorus.jax: alltoall '" + m.names[0] + "' inside jax.jit: the ranks' first dimensions differ (" +
                        each +
                        " by rank), but a traced result's shape is fixed: inside jax.jit every rank's "
                        "first dimension must be equal (outside jax.jit pass splits)");
}

XLA_FFI_Error* barrier(const CallFrame& frame, HandlerCall& call) {
  const int rc = chorus_functions()->chorus_barrier_in_set(static_cast<int>(frame.int_attr("process_set", 0)));
  return rc < 0 ? call.failed(rc) : nullptr;
}

// Result: the rank that joined last, as an int32 scalar.
XLA_FFI_Error* join(const CallFrame& frame, HandlerCall& call) {
  const int last = chorus_functions()->chorus_join();
  if (last < 0) return call.failed(last);
  if (frame.results().size() != 1 || frame.results()[0]->dtype != XLA_FFI_DataType_S32) {
    return call.error(XLA_FFI_Error_Code_INTERNAL, "chorus.jax: join traced without its int32 result");
  }
  *static_cast<int32_t*>(frame.results()[0]->data) = last;
  return nullptr;
}

// A call this rank could not make while tracing (a dtype or shape the
// collective does not take here), lowered in its place: it fails on every
// rank under the name the call would have had (and, for an allgather, its
// rows member too), so no rank waits for it. Attributes: kind (the
// collective's name), name, why, process_set.
XLA_FFI_Error* refuse_traced(const CallFrame& frame, HandlerCall& call) {
  static const std::pair<const char*, chorus_collective> kKinds[] = {{"allreduce", CHORUS_COLLECTIVE_ALLREDUCE},
                                                                     {"allgather", CHORUS_COLLECTIVE_ALLGATHER},
                                                                     {"reducescatter", CHORUS_COLLECTIVE_REDUCESCATTER},
                                                                     {"broadcast", CHORUS_COLLECTIVE_BROADCAST},
                                                                     {"alltoall", CHORUS_COLLECTIVE_ALLTOALL}};
  const std::string kind = frame.string_attr("kind");
  const int64_t set = frame.int_attr("process_set", 0);
  for (const auto& [text, collective] : kKinds) {
    if (kind != text) continue;
    Members m = members_of(frame, text, set);
    m.unsupported = frame.string_attr("why", "chorus.jax: refused on this rank");
    if (collective == CHORUS_COLLECTIVE_ALLGATHER) {  // the others' call carries its rows member
      m.names.push_back(m.names[0] + ".rows");
      m.name_ptrs.clear();
      for (const std::string& n : m.names) m.name_ptrs.push_back(n.c_str());
    }
    return refuse(call, m, collective, set);
  }
  return call.error(XLA_FFI_Error_Code_INTERNAL,
                    "chorus.jax: a refusal traced for an unknown collective '" + kind + "'");
}

XLA_FFI_Error* run(XLA_FFI_CallFrame* raw, XLA_FFI_Error* (*handler)(const CallFrame&, HandlerCall&)) {
  CallFrame frame(raw);
  if (frame.nothing_to_run()) return nullptr;
  HandlerCall call(frame);
  if (chorus_functions() == nullptr) {
    return call.error(XLA_FFI_Error_Code_FAILED_PRECONDITION,
                      "Chorus's JAX handlers are not bound to libchorus: import chorus.jax before running them");
  }
  try {
    return handler(frame, call);
  } catch (const std::exception& e) {
    return call.error(XLA_FFI_Error_Code_INTERNAL, std::string("chorus.jax: ") + e.what());
  }
}

}  // namespace

}  // namespace chorus::jax

extern "C" {

// One exported XLA FFI handler per collective: chorus_jax_<kind>.
#define CHORUS_JAX_HANDLER(kind, body) \
  CHORUS_JAX_EXPORT XLA_FFI_Error* chorus_jax_##kind(XLA_FFI_CallFrame* f) { return chorus::jax::run(f, body); }

CHORUS_JAX_HANDLER(allreduce, chorus::jax::allreduce)
CHORUS_JAX_HANDLER(allgather, chorus::jax::allgather)
CHORUS_JAX_HANDLER(reducescatter, chorus::jax::reducescatter)
CHORUS_JAX_HANDLER(broadcast, chorus::jax::broadcast)
CHORUS_JAX_HANDLER(alltoall, chorus::jax::alltoall)
CHORUS_JAX_HANDLER(barrier, chorus::jax::barrier)
CHORUS_JAX_HANDLER(join, chorus::jax::join)
CHORUS_JAX_HANDLER(refuse, chorus::jax::refuse_traced)

#undef CHORUS_JAX_HANDLER

// Binds the handlers to the libchorus at `library_path` (already loaded by
// the caller): 0, or -1 with the reason in `error`.
CHORUS_JAX_EXPORT int chorus_jax_bind(const char* library_path, char* error, int error_size) {
  return chorus::adapter::bind_chorus_functions(library_path, "the JAX FFI handlers", error, error_size);
}

}  // extern "C"
