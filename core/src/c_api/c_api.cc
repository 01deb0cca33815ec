// The C ABI over the C++ API. Every entry point catches everything: no
// exception may cross extern "C". Handles are integers mapped to
// chorus::Handle in a table; chorus_wait releases them.
#include "chorus/c_api.h"

#include <mutex>
#include <string>
#include <unordered_map>

#include "chorus/chorus.h"

namespace {

thread_local std::string last_error;

int code_of(chorus::StatusCode code) {
  switch (code) {
    case chorus::StatusCode::kOk: return CHORUS_OK;
    case chorus::StatusCode::kPreconditionError: return CHORUS_ERR_PRECONDITION;
    case chorus::StatusCode::kAborted: return CHORUS_ERR_ABORTED;
    case chorus::StatusCode::kInvalidArgument: return CHORUS_ERR_INVALID_ARGUMENT;
    case chorus::StatusCode::kTimeout: return CHORUS_ERR_TIMEOUT;
    default: return CHORUS_ERR_UNKNOWN;
  }
}

int fail(int code, std::string message) {
  last_error = std::move(message);
  return code;
}

int fail(const chorus::Status& s) { return fail(code_of(s.code()), s.message()); }

// Runs `body` (returning an int result), turning any exception into a code.
template <class F>
int guarded(F&& body) {
  last_error.clear();
  try {
    return body();
  } catch (const chorus::Error& e) {
    return fail(e.status());
  } catch (const std::exception& e) {
    return fail(CHORUS_ERR_UNKNOWN, e.what());
  } catch (...) {
    return fail(CHORUS_ERR_UNKNOWN, "unknown exception");
  }
}

class HandleTable {
 public:
  int64_t add(chorus::Handle h) {
    std::lock_guard<std::mutex> lock(mu_);
    const int64_t id = next_++;
    handles_.emplace(id, std::move(h));
    return id;
  }
  bool find(int64_t id, chorus::Handle* out) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = handles_.find(id);
    if (it == handles_.end()) return false;
    *out = it->second;
    return true;
  }
  void erase(int64_t id) {
    std::lock_guard<std::mutex> lock(mu_);
    handles_.erase(id);
  }

 private:
  std::mutex mu_;
  int64_t next_ = 1;
  std::unordered_map<int64_t, chorus::Handle> handles_;
};

HandleTable& handles() {
  static HandleTable* table = new HandleTable();  // leaked: outlives static destructors
  return *table;
}

int unknown_handle(int64_t id) {
  return fail(CHORUS_ERR_UNKNOWN_HANDLE, "unknown chorus handle " + std::to_string(id) +
                                             " (never returned, or already waited for)");
}

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

int chorus_rank(void) { return topology_value([] { return chorus::rank(); }); }
int chorus_size(void) { return topology_value([] { return chorus::size(); }); }
int chorus_local_rank(void) { return topology_value([] { return chorus::local_rank(); }); }
int chorus_local_size(void) { return topology_value([] { return chorus::local_size(); }); }
int chorus_cross_rank(void) { return topology_value([] { return chorus::cross_rank(); }); }
int chorus_cross_size(void) { return topology_value([] { return chorus::cross_size(); }); }

int chorus_allreduce_async(const char* name, const void* input, void* output, int64_t count,
                           chorus_dtype dtype, chorus_reduce_op op, double prescale,
                           double postscale, int64_t* handle) {
  return guarded([&]() -> int {
    if (name == nullptr) return fail(CHORUS_ERR_INVALID_ARGUMENT, "chorus_allreduce_async: name is NULL");
    const std::string what = std::string("chorus_allreduce_async('") + name + "'): ";
    if (handle == nullptr) return fail(CHORUS_ERR_INVALID_ARGUMENT, what + "handle is NULL");
    if (count < 0) return fail(CHORUS_ERR_INVALID_ARGUMENT, what + "count " + std::to_string(count) + " is negative");
    if (count > 0 && (input == nullptr || output == nullptr)) {
      return fail(CHORUS_ERR_INVALID_ARGUMENT, what + "input or output is NULL");
    }
    if (!chorus::is_valid_dtype(dtype)) return fail(CHORUS_ERR_INVALID_ARGUMENT, what + "unknown dtype " + std::to_string(dtype));
    if (!chorus::is_valid_reduce_op(op)) return fail(CHORUS_ERR_INVALID_ARGUMENT, what + "unknown reduce op " + std::to_string(op));
    const auto dt = static_cast<chorus::DataType>(dtype);
    auto in = std::make_shared<chorus::HostTensorView>(const_cast<void*>(input), dt, chorus::TensorShape{count});
    auto out = input == output ? in : std::make_shared<chorus::HostTensorView>(output, dt, chorus::TensorShape{count});
    chorus::AllreduceOptions options;
    options.op = static_cast<chorus::ReduceOp>(op);
    options.prescale_factor = prescale;
    options.postscale_factor = postscale;
    *handle = handles().add(chorus::allreduce_async(name, in, out, options));
    return CHORUS_OK;
  });
}

int chorus_broadcast_async(const char* name, void* buffer, int64_t count, chorus_dtype dtype,
                           int root_rank, int64_t* handle) {
  return guarded([&]() -> int {
    if (name == nullptr) return fail(CHORUS_ERR_INVALID_ARGUMENT, "chorus_broadcast_async: name is NULL");
    const std::string what = std::string("chorus_broadcast_async('") + name + "'): ";
    if (handle == nullptr) return fail(CHORUS_ERR_INVALID_ARGUMENT, what + "handle is NULL");
    if (count < 0) return fail(CHORUS_ERR_INVALID_ARGUMENT, what + "count " + std::to_string(count) + " is negative");
    if (count > 0 && buffer == nullptr) return fail(CHORUS_ERR_INVALID_ARGUMENT, what + "buffer is NULL");
    if (!chorus::is_valid_dtype(dtype)) return fail(CHORUS_ERR_INVALID_ARGUMENT, what + "unknown dtype " + std::to_string(dtype));
    auto t = std::make_shared<chorus::HostTensorView>(buffer, static_cast<chorus::DataType>(dtype), chorus::TensorShape{count});
    *handle = handles().add(chorus::broadcast_async(name, t, root_rank));
    return CHORUS_OK;
  });
}

int chorus_poll(int64_t handle) {
  return guarded([&]() -> int {
    chorus::Handle h;
    if (!handles().find(handle, &h)) return unknown_handle(handle);
    if (!h.poll()) return 0;
    const chorus::Status s = h.status();
    return s.is_ok() ? 1 : fail(s);
  });
}

int chorus_wait(int64_t handle) {
  return guarded([&]() -> int {
    chorus::Handle h;
    if (!handles().find(handle, &h)) return unknown_handle(handle);
    const chorus::Status s = h.wait_status();
    handles().erase(handle);
    return s.is_ok() ? CHORUS_OK : fail(s);
  });
}

const char* chorus_last_error(void) { return last_error.c_str(); }

int chorus_abi_version(void) { return CHORUS_ABI_VERSION; }

}  // extern "C"
