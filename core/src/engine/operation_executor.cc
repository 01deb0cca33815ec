#include "engine/operation_executor.h"

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstring>
#include <string>

#include "dataplane/chunks.h"
#include "engine/output_slot.h"

namespace chorus::detail {

namespace {
// Responses that move tensor bytes; errors, barriers and joins move none.
bool moves_data(ResponseType type) {
  return type == ResponseType::kAllreduce || type == ResponseType::kAllgather || type == ResponseType::kBroadcast ||
         type == ResponseType::kReducescatter || type == ResponseType::kAlltoall;
}

// Horovod's name for the negotiation span, which timeline readers know:
// NEGOTIATE_ALLREDUCE, NEGOTIATE_ALLGATHER, ...
std::string negotiate_span(CollectiveType type) {
  std::string name = std::string("NEGOTIATE_") + collective_name(type);
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return c == ' ' ? '_' : static_cast<char>(std::toupper(c)); });
  return name;
}
}  // namespace

void OperationExecutor::execute(const Response& response, std::vector<TensorEntry> entries) {
  if (timeline_.enabled()) {
    const auto now = Clock::now();
    for (const auto& e : entries) {
      timeline_.record(e.name(), negotiate_span(e.request.type), e.enqueued, now);
    }
  }
  if (response.device_kind == DeviceKind::kCuda && moves_data(response.type)) {
    run_on_device(response, std::move(entries));
    return;
  }
  const std::vector<Status> each = run(response, entries);
  int64_t failed = 0;
  for (const Status& s : each) failed += !s.is_ok();
  if (failed > 0) stats_.update([&](RuntimeStats& st) { st.errors += failed; });
  CompletionBatch batch;  // wakes every waiter once all are complete
  for (size_t i = 0; i < entries.size(); ++i) finish_entry(std::move(entries[i]), each[i], batch);
}

// The first CUDA response makes the device operations: here, on the
// background thread, at the same place of the response order on every rank
// (making them may be a collective). A failure fails this and every later
// CUDA response with the same message on every rank.
void OperationExecutor::run_on_device(const Response& response, std::vector<TensorEntry> entries) {
  if (!device_ops_ && device_error_.is_ok()) {
    StatusOr<std::unique_ptr<DeviceOperations>> made =
        make_device_operations(device_, {backend_, options_, logger_, stats_, device_.memory, timeline_});
    if (made.is_ok()) {
      device_ops_ = std::move(made).value();
    } else {
      device_error_ = made.status();
    }
  }
  if (device_ops_) {
    device_ops_->execute(response, std::move(entries));
    return;
  }
  stats_.update([&](RuntimeStats& st) { st.errors += static_cast<int64_t>(entries.size()); });
  CompletionBatch batch;
  for (TensorEntry& e : entries) {
    const Status failed(device_error_.code(), std::string(collective_name(e.request.type)) + " of CUDA tensor '" +
                                                  e.name() + "': " + device_error_.message());
    finish_entry(std::move(e), failed, batch);
  }
}

void OperationExecutor::end_device(const Status& why) {
  if (!device_ops_) return;
  if (!device_ops_->fault().is_ok()) device_ops_->abort(why);
  device_ops_.reset();  // drains: the other ranks wait in the collectives already negotiated
}

std::vector<Status> OperationExecutor::run(const Response& response, std::vector<TensorEntry>& entries) {
  Status status;
  std::vector<Status> each;  // set when tensors of one response may fail apart
  switch (response.type) {
    case ResponseType::kError:
      status = Status::invalid_argument(response.error_message);
      break;
    case ResponseType::kAllreduce:
      status = allreduce(entries);
      break;
    case ResponseType::kAllgather:
      each = allgather_.run(response, entries);
      record_allgather(entries.size(), each);
      break;
    case ResponseType::kBroadcast:
    case ResponseType::kReducescatter:
    case ResponseType::kAlltoall:
      if (entries.size() != 1) {
        status = Status::internal("a " + std::string(collective_name(entries.front().request.type)) +
                                  " response carries " + std::to_string(entries.size()) + " tensors");
      } else if (response.type == ResponseType::kBroadcast) {
        status = broadcast(entries.front());
      } else if (response.type == ResponseType::kReducescatter) {
        status = reducescatter(entries.front());
      } else {
        status = alltoall(response, entries.front());
      }
      break;
    case ResponseType::kBarrier:
      break;  // every rank had arrived when the coordinator answered: that is the barrier
    case ResponseType::kAddProcessSet:  // run by the background loop, which owns the backend
      status = Status::internal("a process-set registration reached the executor");
      break;
    case ResponseType::kJoin:
      for (auto& e : entries) {
        if (e.handle) e.handle->set_last_joined_rank(response.last_joined_rank);
      }
      break;
  }
  if (each.empty()) each.assign(entries.size(), status);
  return each;
}

void OperationExecutor::record_allgather(size_t tensors, const std::vector<Status>& each) {
  int64_t ok = 0;
  for (const Status& s : each) ok += s.is_ok();
  stats_.update([&](RuntimeStats& st) { count_allgather(st, tensors, ok); });
}

Status OperationExecutor::allreduce(std::vector<TensorEntry>& entries) {
  const Request& first = entries.front().request;
  FusedAllreduce& op = fused_;  // reused: its piece list keeps its capacity
  op.pieces.clear();
  op.dtype = first.dtype;
  op.op = first.op;
  op.prescale = first.prescale;
  op.postscale = first.postscale;
  op.pieces.reserve(entries.size());
  int64_t total = 0;
  for (const auto& e : entries) {
    op.pieces.push_back({e.input->data(), e.output->mutable_data(), e.request.num_elements()});
    total += e.request.num_elements();
  }
  const auto start = Clock::now();
  const AllreduceOutcome outcome = data_.allreduce(op);
  if (!outcome.warning.empty()) {
    CHORUS_LOG(logger_, kWarning) << outcome.warning;
  }
  const int64_t bytes = total * dtype_size(op.dtype);
  if (timeline_.enabled()) record_allreduce(entries.size(), bytes, outcome, start);
  if (!outcome.status.is_ok()) return outcome.status;
  stats_.update([&](InternalStats& st) {
    ++st.allreduce_ops;
    if (entries.size() > 1) ++st.fused_allreduce_ops;
    if (outcome.in_place_span) ++st.in_place_fused_allreduce_ops;
    st.tensors_allreduced += static_cast<int64_t>(entries.size());
    st.bytes_allreduced += bytes;
    st.ring_allreduce_ops += outcome.route == AllreduceRoute::kRing;
    st.adasum_allreduce_ops += outcome.route == AllreduceRoute::kAdasum;
    st.hierarchical_allreduce_ops += outcome.route == AllreduceRoute::kHierarchical;
    st.shm_allreduce_ops += on_shared_memory(outcome.route);
    st.shm_zero_copy_ops += outcome.zero_copy;
    st.shm_single_copy_ops += outcome.route == AllreduceRoute::kSingleCopy;
  });
  return outcome.status;
}

void OperationExecutor::record_allreduce(size_t tensors, int64_t bytes, const AllreduceOutcome& outcome,
                                         Clock::time_point start) {
  const std::string args = "{\"tensors\":" + std::to_string(tensors) + ",\"bytes\":" + std::to_string(bytes) + "}";
  const char* row = "data plane";
  if (outcome.packed > start) timeline_.record(row, "PACK", start, outcome.packed, args);
  timeline_.record(row, std::string("ALLREDUCE ") + route_name(outcome.route), outcome.packed, outcome.reduced, args);
  timeline_.record(row, "UNPACK", outcome.reduced, Clock::now(), args);
}

// Rank r receives rows even_chunk(rows, n, r) of the reduced tensor: the
// first (rows mod n) ranks one row more than the others.
Status OperationExecutor::reducescatter(TensorEntry& e) {
  const Request& r = e.request;
  const std::string what = "reducescatter of tensor '" + r.name + "': ";
  const int64_t rows = r.shape.front();
  int64_t row_elems = 1;
  const TensorShape out_shape = with_rows(even_chunk(rows, world_size_, rank_).length, r.shape, &row_elems);
  std::vector<int64_t> counts(static_cast<size_t>(world_size_));
  for (int k = 0; k < world_size_; ++k)
    counts[static_cast<size_t>(k)] = even_chunk(rows, world_size_, k).length * row_elems;
  OutputSlot out = allocate_output(e, out_shape, logger_);

  Status s = data_.reducescatter(e.input->data(), out.data(), counts, r.dtype, r.op, r.prescale, r.postscale);
  if (!s.is_ok()) return Status(s.code(), what + s.message());
  if (!out.alloc.is_ok()) return Status(out.alloc.code(), what + out.alloc.message());
  e.output = out.tensor;
  if (e.handle) e.handle->set_output(std::move(out.tensor));
  return Status::ok();
}

Status OperationExecutor::alltoall(const Response& response, TensorEntry& e) {
  const Request& r = e.request;
  const std::string what = "alltoall of tensor '" + r.name + "': ";
  const size_t n = static_cast<size_t>(world_size_);
  if (response.splits.size() != n * n) {
    return Status::internal(what + "the response has " + std::to_string(response.splits.size()) + " splits for " +
                            std::to_string(world_size_) + " ranks");
  }
  // Every rank checks the whole matrix (the same on every rank), so all
  // refuse together instead of some entering the transport and waiting forever.
  for (size_t a = 0; a < n; ++a) {
    int64_t sent = 0, got = 0;
    for (size_t b = 0; b < n; ++b) {
      sent += response.splits[a * n + b];
      got += response.splits[b * n + a];
    }
    if (sent > INT_MAX || got > INT_MAX) {
      return Status::invalid_argument(what + "rank " + std::to_string(a) + " would move " +
                                      std::to_string(std::max(sent, got)) +
                                      " rows, more than one alltoall call of the transport can address (2^31)");
    }
  }
  std::vector<int64_t> received(n);
  int64_t rows = 0;
  for (size_t s = 0; s < n; ++s) {
    received[s] = response.splits[s * n + static_cast<size_t>(rank_)];
    rows += received[s];
  }
  int64_t row_elems = 1;
  const TensorShape out_shape = with_rows(rows, r.shape, &row_elems);
  OutputSlot out = allocate_output(e, out_shape, logger_);
  Status s = data_.collectives().alltoallv(e.input->data(), r.splits, out.data(), received, row_elems * dtype_size(r.dtype));
  if (!s.is_ok()) return Status(s.code(), what + s.message());
  if (!out.alloc.is_ok()) return Status(out.alloc.code(), what + out.alloc.message());
  e.output = out.tensor;
  if (e.handle) e.handle->set_output(std::move(out.tensor), std::move(received));
  return Status::ok();
}

Status OperationExecutor::broadcast(TensorEntry& entry) {
  void* buffer = entry.output->mutable_data();
  if (rank_ == entry.request.root_rank && entry.input != entry.output && entry.output->size_bytes() > 0) {
    std::memcpy(buffer, entry.input->data(), static_cast<size_t>(entry.output->size_bytes()));  // out of place
  }
  Status s = data_.collectives().broadcast(buffer, entry.output->size_bytes(), entry.request.root_rank);
  if (s.is_ok()) stats_.update([](RuntimeStats& st) { ++st.broadcasts; });
  return s;
}

}  // namespace chorus::detail
