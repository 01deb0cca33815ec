#include "runtime/operation_executor.h"

#include <climits>
#include <cstring>
#include <thread>

#include "algorithms/reduce_kernels.h"
#include "algorithms/ring_allreduce.h"
#include "runtime/output_slot.h"

namespace chorus::detail {

namespace {

void wait_until_ready(const std::vector<TensorEntry>& entries) {
  for (const auto& e : entries) {
    if (!e.hooks.ready_event) continue;
    while (!e.hooks.ready_event->ready()) std::this_thread::yield();
  }
}

// The start of the entries' memory when each entry is reduced in place and
// begins where the previous one ends; nullptr otherwise. This is this rank's
// layout, which other ranks do not share: it may only decide where the bytes
// are reduced, never what is computed. Both the in-place span and the fusion
// buffer therefore go through the same allreduce call with the same scaling
// (the ring scales each chunk on the rank that finishes it, so a rank that
// scaled on unpack instead would hand out unscaled chunks to the others).
char* contiguous_in_place(const std::vector<TensorEntry>& entries, int64_t esize) {
  char* start = nullptr;
  char* next = nullptr;
  for (const auto& e : entries) {
    char* out = static_cast<char*>(e.output->mutable_data());
    if (out == nullptr || out != e.input->data()) return nullptr;
    if (next != nullptr && out != next) return nullptr;
    if (start == nullptr) start = out;
    next = out + e.request.num_elements() * esize;
  }
  return start;
}

}  // namespace

void OperationExecutor::execute(const Response& response, std::vector<TensorEntry> entries) {
  if (timeline_.enabled()) {
    const auto now = Clock::now();
    for (const auto& e : entries) {
      timeline_.record(e.name(), std::string("NEGOTIATE ") + collective_name(e.request.type), e.enqueued, now);
    }
  }
  Status status;
  std::vector<Status> each;  // set when tensors of one response may fail apart
  switch (response.type) {
    case ResponseType::kError:
      status = Status::invalid_argument(response.error_message);
      break;
    case ResponseType::kAllreduce:
      wait_until_ready(entries);
      status = allreduce(entries);
      break;
    case ResponseType::kAllgather:
      wait_until_ready(entries);
      each = allgather_.run(response, entries);
      record_allgather(entries.size(), each);
      break;
    case ResponseType::kBroadcast:
    case ResponseType::kReducescatter:
    case ResponseType::kAlltoall:
      wait_until_ready(entries);
      if (entries.size() != 1) {
        status = Status::unknown_error("internal: a " + std::string(collective_name(entries.front().request.type)) +
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
      status = Status::unknown_error("internal: a process-set registration reached the executor");
      break;
    case ResponseType::kJoin:
      for (auto& e : entries) {
        if (e.handle) e.handle->set_last_joined_rank(response.last_joined_rank);
      }
      break;
  }
  if (each.empty()) each.assign(entries.size(), status);
  int64_t failed = 0;
  for (const Status& s : each) failed += !s.is_ok();
  if (failed > 0) stats_.update([&](RuntimeStats& st) { st.errors += failed; });
  CompletionBatch batch;  // wakes every waiter once all are complete
  for (size_t i = 0; i < entries.size(); ++i) finish_entry(std::move(entries[i]), each[i], batch);
}

void OperationExecutor::record_allgather(size_t tensors, const std::vector<Status>& each) {
  int64_t ok = 0;
  for (const Status& s : each) ok += s.is_ok();
  stats_.update([&](RuntimeStats& st) {
    st.allgathers += ok;
    ++st.allgather_ops;
    if (tensors > 1) ++st.fused_allgather_ops;
  });
}

Status OperationExecutor::allreduce(std::vector<TensorEntry>& entries) {
  const Request& first = entries.front().request;
  const DataType dtype = first.dtype;
  const int64_t esize = dtype_size(dtype);
  // Average is a sum whose division rides on the copy out.
  const ReduceOp wire_op = first.op == ReduceOp::kAverage ? ReduceOp::kSum : first.op;
  const int64_t divisor = first.op == ReduceOp::kAverage ? world_size_ : 1;

  int64_t total = 0;
  for (const auto& e : entries) total += e.request.num_elements();
  const int64_t ring_before = comm_.ring_allreduces(), shared_before = comm_.shared_memory_allreduces();
  const auto t_start = Clock::now();
  auto t_packed = t_start, t_reduced = t_start;
  bool in_place_fused = false;

  Status s;
  if (entries.size() == 1 && first.prescale != 1.0 && comm_.reduces_pieces(total * esize)) {
    // Unfused and prescaled, on a data plane that scales while it copies in:
    // no separate prescale pass.
    TensorEntry& e = entries.front();
    const std::vector<ReducePiece> piece{{e.input->data(), e.output->mutable_data(), total}};
    t_packed = Clock::now();
    s = comm_.allreduce_pieces(piece, dtype, wire_op, first.prescale, PostScale{first.postscale, divisor});
    t_reduced = Clock::now();
  } else if (entries.size() == 1) {
    // Unfused: straight from the input into the output, no staging copy;
    // the data plane scales the result on a pass it makes anyway.
    TensorEntry& e = entries.front();
    void* out = e.output->mutable_data();
    const void* in = e.input->data();
    if (first.prescale != 1.0) {
      scale_copy(out, in, total, dtype, first.prescale, 1);
      in = out;
    }
    t_packed = Clock::now();
    s = comm_.allreduce(in, out, total, dtype, wire_op, PostScale{first.postscale, divisor});
    t_reduced = Clock::now();
  } else if (char* span = contiguous_in_place(entries, esize)) {
    // The tensors already lie back to back, in the response's order (an
    // adapter that keeps gradients in one flat buffer): reduce them where
    // they are, as one tensor, with no staging copies.
    if (first.prescale != 1.0) scale_copy(span, span, total, dtype, first.prescale, 1);
    t_packed = Clock::now();
    s = comm_.allreduce(span, span, total, dtype, wire_op, PostScale{first.postscale, divisor});
    t_reduced = Clock::now();
    in_place_fused = true;
  } else if (comm_.reduces_pieces(total * esize)) {
    // The data plane reads and writes each tensor where it lies (shared
    // memory): no fusion-buffer copies.
    std::vector<ReducePiece> pieces;
    pieces.reserve(entries.size());
    for (const auto& e : entries) pieces.push_back({e.input->data(), e.output->mutable_data(), e.request.num_elements()});
    t_packed = Clock::now();
    s = comm_.allreduce_pieces(pieces, dtype, wire_op, first.prescale, PostScale{first.postscale, divisor});
    t_reduced = Clock::now();
  } else {
    char* buffer = static_cast<char*>(fusion_.reserve(total * esize));
    int64_t offset = 0;
    for (const auto& e : entries) {
      const int64_t n = e.request.num_elements();
      scale_copy(buffer + offset * esize, e.input->data(), n, dtype, first.prescale, 1);
      offset += n;
    }
    t_packed = Clock::now();
    // The same call as the in-place span above: see contiguous_in_place().
    s = comm_.allreduce(buffer, buffer, total, dtype, wire_op, PostScale{first.postscale, divisor});
    t_reduced = Clock::now();
    offset = 0;
    for (auto& e : entries) {
      if (!s.is_ok()) break;
      const int64_t n = e.request.num_elements();
      if (n > 0) std::memcpy(e.output->mutable_data(), buffer + offset * esize, static_cast<size_t>(n * esize));
      offset += n;
    }
  }
  if (timeline_.enabled()) {
    const char* algorithm = comm_.shared_memory_allreduces() > shared_before ? "shm"
                            : comm_.ring_allreduces() > ring_before          ? "ring"
                                                                             : "mpi";
    record_allreduce(entries.size(), total * esize, algorithm, t_start, t_packed, t_reduced);
  }
  if (!s.is_ok()) return s;
  stats_.update([&](RuntimeStats& st) {
    ++st.allreduce_ops;
    if (entries.size() > 1) ++st.fused_allreduce_ops;
    if (in_place_fused) ++st.in_place_fused_allreduce_ops;
    st.tensors_allreduced += static_cast<int64_t>(entries.size());
    st.bytes_allreduced += total * esize;
    st.ring_allreduce_ops = comm_.ring_allreduces();
    st.shm_allreduce_ops = comm_.shared_memory_allreduces();
    st.shm_zero_copy_ops = comm_.zero_copy_allreduces();
  });
  return s;
}

void OperationExecutor::record_allreduce(size_t tensors, int64_t bytes, const char* algorithm,
                                         Clock::time_point start, Clock::time_point packed,
                                         Clock::time_point reduced) {
  const std::string args = "{\"tensors\":" + std::to_string(tensors) + ",\"bytes\":" + std::to_string(bytes) + "}";
  const char* row = "data plane";
  if (packed > start) timeline_.record(row, "PACK", start, packed, args);
  timeline_.record(row, std::string("ALLREDUCE ") + algorithm, packed, reduced, args);
  timeline_.record(row, "UNPACK", reduced, Clock::now(), args);
}

// Rank r receives rows ring_chunk(rows, n, r) of the reduced tensor: the
// first (rows mod n) ranks one row more than the others.
Status OperationExecutor::reducescatter(TensorEntry& e) {
  const Request& r = e.request;
  const std::string what = "reducescatter of tensor '" + r.name + "': ";
  const int64_t rows = r.shape.front();
  int64_t row_elems = 1;
  const TensorShape out_shape = with_rows(ring_chunk(rows, world_size_, rank_).length, r.shape, &row_elems);
  std::vector<int64_t> counts(static_cast<size_t>(world_size_));
  for (int k = 0; k < world_size_; ++k) counts[static_cast<size_t>(k)] = ring_chunk(rows, world_size_, k).length * row_elems;
  OutputSlot out = allocate_output(e, out_shape, logger_);

  const void* in = e.input->data();
  std::vector<char> scaled;  // prescale needs a copy: the input is the caller's
  if (r.prescale != 1.0) {
    scaled.resize(static_cast<size_t>(rows * row_elems * dtype_size(r.dtype)) + 1);
    scale_copy(scaled.data(), in, rows * row_elems, r.dtype, r.prescale, 1);
    in = scaled.data();
  }
  const ReduceOp wire_op = r.op == ReduceOp::kAverage ? ReduceOp::kSum : r.op;
  Status s = comm_.reducescatter(in, out.data(), counts, r.dtype, wire_op);
  if (!s.is_ok()) return Status(s.code(), what + s.message());
  if (!out.alloc.is_ok()) return Status(out.alloc.code(), what + out.alloc.message());
  const int64_t divisor = r.op == ReduceOp::kAverage ? world_size_ : 1;
  scale_copy(out.data(), out.data(), out_shape.num_elements(), r.dtype, r.postscale, divisor);
  e.output = out.tensor;
  if (e.handle) e.handle->set_output(std::move(out.tensor));
  return Status::ok();
}

Status OperationExecutor::alltoall(const Response& response, TensorEntry& e) {
  const Request& r = e.request;
  const std::string what = "alltoall of tensor '" + r.name + "': ";
  const size_t n = static_cast<size_t>(world_size_);
  if (response.splits.size() != n * n) {
    return Status::unknown_error(what + "internal: the response has " + std::to_string(response.splits.size()) +
                                 " splits for " + std::to_string(world_size_) + " ranks");
  }
  // Every rank checks the whole matrix (the same on every rank), so all
  // refuse together instead of some entering MPI and waiting forever.
  for (size_t a = 0; a < n; ++a) {
    int64_t sent = 0, got = 0;
    for (size_t b = 0; b < n; ++b) {
      sent += response.splits[a * n + b];
      got += response.splits[b * n + a];
    }
    if (sent > INT_MAX || got > INT_MAX) {
      return Status::invalid_argument(what + "rank " + std::to_string(a) + " would move " +
                                      std::to_string(std::max(sent, got)) +
                                      " rows, more than one MPI_Alltoallv call can address (2^31)");
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
  Status s = comm_.alltoallv(e.input->data(), r.splits, out.data(), received, row_elems * dtype_size(r.dtype));
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
  Status s = comm_.broadcast(buffer, entry.output->size_bytes(), entry.request.root_rank);
  if (s.is_ok()) stats_.update([](RuntimeStats& st) { ++st.broadcasts; });
  return s;
}

}  // namespace chorus::detail
