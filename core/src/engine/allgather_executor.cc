#include "engine/allgather_executor.h"

#include <cstring>

#include "engine/output_slot.h"

namespace chorus::detail {

namespace {

Status with_context(const Status& s, const std::string& what) {
  return s.is_ok() ? s : Status(s.code(), what + s.message());
}

// Publishes a filled output, or reports why it could not be allocated.
Status deliver(TensorEntry& e, OutputSlot& out) {
  if (!out.alloc.is_ok()) return out.alloc;
  e.output = out.tensor;
  if (e.handle) e.handle->set_output(std::move(out.tensor));
  return Status::ok();
}

}  // namespace

std::vector<Status> AllgatherExecutor::run(const Response& response, std::vector<TensorEntry>& entries) {
  const size_t n = static_cast<size_t>(world_size_);
  std::vector<Status> each(entries.size());
  if (response.first_dims.size() != entries.size() * n) {
    const Status bad = Status::internal("allgather of tensor '" + entries.front().name() + "': the response has " +
                                        std::to_string(response.first_dims.size()) + " first dimensions for " +
                                        std::to_string(entries.size()) + " tensors on " +
                                        std::to_string(world_size_) + " ranks");
    each.assign(entries.size(), bad);
    return each;
  }
  if (entries.size() > 1) {
    const Status s = run_fused(response, entries, &each);
    if (!s.is_ok()) each.assign(entries.size(), s);
    return each;
  }
  TensorEntry& e = entries.front();
  const std::string what = "allgather of tensor '" + e.name() + "': ";
  int64_t rows = 0, row_elems = 1;
  for (int64_t d : response.first_dims) rows += d;
  OutputSlot out = allocate_output(e, with_rows(rows, e.request.shape, &row_elems), logger_);
  Status s = comm_.allgatherv(e.input->data(), out.data(), response.first_dims, row_elems * dtype_size(e.request.dtype));
  each.front() = with_context(s.is_ok() ? deliver(e, out) : s, what);
  return each;
}

// first_dims holds tensor t's rows from rank r at [t * n + r]. Rank r's
// block of the packed buffer is its rows of tensor 0, then of tensor 1, ...
Status AllgatherExecutor::run_fused(const Response& response, std::vector<TensorEntry>& entries,
                                    std::vector<Status>* each) {
  const size_t n = static_cast<size_t>(world_size_), count = entries.size();
  std::vector<int64_t> row_bytes(count), block_bytes(n, 0);
  std::vector<OutputSlot> outs;
  outs.reserve(count);
  for (size_t t = 0; t < count; ++t) {
    const Request& r = entries[t].request;
    int64_t rows = 0, row_elems = 1;
    for (size_t k = 0; k < n; ++k) rows += response.first_dims[t * n + k];
    outs.push_back(allocate_output(entries[t], with_rows(rows, r.shape, &row_elems), logger_));
    row_bytes[t] = row_elems * dtype_size(r.dtype);
    for (size_t k = 0; k < n; ++k) block_bytes[k] += response.first_dims[t * n + k] * row_bytes[t];
  }
  int64_t total = 0;
  for (int64_t b : block_bytes) total += b;

  char* send = static_cast<char*>(send_.reserve(block_bytes[static_cast<size_t>(rank_)]));
  int64_t at = 0;
  for (size_t t = 0; t < count; ++t) {
    const int64_t bytes = response.first_dims[t * n + static_cast<size_t>(rank_)] * row_bytes[t];
    if (bytes > 0) std::memcpy(send + at, entries[t].input->data(), static_cast<size_t>(bytes));
    at += bytes;
  }
  char* recv = static_cast<char*>(recv_.reserve(total));
  Status s = comm_.allgatherv(send, recv, block_bytes, 1);
  if (!s.is_ok()) {
    return Status(s.code(), "fused allgather of tensor '" + entries.front().name() + "' and " +
                                std::to_string(count - 1) + " more: " + s.message());
  }
  // Walk every rank's block once, handing each tensor its rows.
  std::vector<int64_t> written(count, 0);
  int64_t block_start = 0;
  for (size_t k = 0; k < n; ++k) {
    int64_t in_block = 0;
    for (size_t t = 0; t < count; ++t) {
      const int64_t bytes = response.first_dims[t * n + k] * row_bytes[t];
      if (bytes > 0) {
        std::memcpy(static_cast<char*>(outs[t].data()) + written[t], recv + block_start + in_block,
                    static_cast<size_t>(bytes));
      }
      written[t] += bytes;
      in_block += bytes;
    }
    block_start += block_bytes[k];
  }
  for (size_t t = 0; t < count; ++t) {
    (*each)[t] = with_context(deliver(entries[t], outs[t]), "allgather of tensor '" + entries[t].name() + "': ");
  }
  return Status::ok();
}

}  // namespace chorus::detail
