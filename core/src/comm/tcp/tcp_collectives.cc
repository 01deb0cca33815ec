#include "comm/tcp/tcp_collectives.h"

#include <cstring>
#include <numeric>

#include "kernels/reduce_kernels.h"

namespace chorus::detail {

namespace {
// Below this many bytes gathered, allreduce sends every rank's whole input
// to every rank (one message delay); above, a reduce-scatter and an
// allgather (each rank sends its buffer about twice).
constexpr int64_t kDirectAllreduceBytes = 64 << 10;
}  // namespace

Status TcpCollectives::exchange(const std::vector<Part>& sends, const std::vector<Part>& recvs) {
  std::vector<TcpMesh::Ticket> tickets;
  tickets.reserve(sends.size() + recvs.size());
  for (const Part& p : recvs) {
    TcpMesh::Ticket t = 0;
    Status s = mesh_.receive(p.peer, TcpChannel::kCollective, 0, p.data, p.bytes, &t);
    if (!s.is_ok()) return s;
    tickets.push_back(t);
  }
  for (const Part& p : sends) {
    TcpMesh::Ticket t = 0;
    Status s = mesh_.send(p.peer, TcpChannel::kCollective, 0, p.data, p.bytes, &t);
    if (!s.is_ok()) return s;
    tickets.push_back(t);
  }
  for (TcpMesh::Ticket t : tickets) {
    Status s = mesh_.wait(t);
    if (!s.is_ok()) return s;
  }
  return Status::ok();
}

Status TcpCollectives::allreduce(const void* input, void* output, int64_t count, DataType dtype, ReduceOp op) {
  const int n = mesh_.size(), me = mesh_.rank();
  const int64_t bytes = count * dtype_size(dtype);
  if (bytes * n > kDirectAllreduceBytes && count >= n) {
    std::vector<int64_t> counts(static_cast<size_t>(n), count / n);
    counts.back() += count % n;
    std::vector<char> mine(static_cast<size_t>(counts[static_cast<size_t>(me)] * dtype_size(dtype)));
    Status s = reducescatter(input, mine.data(), counts, dtype, op);
    if (!s.is_ok()) return s;
    return allgatherv(mine.data(), output, counts, dtype_size(dtype));
  }
  // Everyone's input everywhere, reduced in rank order.
  std::vector<char> all(static_cast<size_t>(bytes * n));
  std::vector<Part> sends, recvs;
  for (int r = 0; r < n; ++r) {
    char* at = all.data() + bytes * r;
    if (r == me) {
      if (bytes > 0) std::memcpy(at, input, static_cast<size_t>(bytes));
      continue;
    }
    sends.push_back({r, const_cast<char*>(static_cast<const char*>(input)), bytes});
    recvs.push_back({r, at, bytes});
  }
  Status s = exchange(sends, recvs);
  if (!s.is_ok()) return s;
  if (bytes > 0) std::memcpy(output, all.data(), static_cast<size_t>(bytes));
  for (int r = 1; r < n; ++r) reduce_into(output, all.data() + bytes * r, count, dtype, op);
  return Status::ok();
}

Status TcpCollectives::broadcast(void* buffer, int64_t bytes, int root) {
  const int n = mesh_.size(), me = mesh_.rank();
  std::vector<Part> sends, recvs;
  if (me == root) {
    for (int r = 0; r < n; ++r) {
      if (r != me) sends.push_back({r, static_cast<char*>(buffer), bytes});
    }
  } else {
    recvs.push_back({root, static_cast<char*>(buffer), bytes});
  }
  return exchange(sends, recvs);
}

Status TcpCollectives::allgatherv(const void* input, void* output, const std::vector<int64_t>& rows,
                                  int64_t row_bytes) {
  const int n = mesh_.size(), me = mesh_.rank();
  std::vector<Part> sends, recvs;
  char* out = static_cast<char*>(output);
  const int64_t mine = rows[static_cast<size_t>(me)] * row_bytes;
  for (int r = 0; r < n; ++r) {
    const int64_t bytes = rows[static_cast<size_t>(r)] * row_bytes;
    if (r == me) {
      if (bytes > 0 && out != input) std::memmove(out, input, static_cast<size_t>(bytes));
    } else {
      sends.push_back({r, const_cast<char*>(static_cast<const char*>(input)), mine});
      recvs.push_back({r, out, bytes});
    }
    out += bytes;
  }
  return exchange(sends, recvs);
}

Status TcpCollectives::alltoallv(const void* input, const std::vector<int64_t>& send_rows, void* output,
                                 const std::vector<int64_t>& recv_rows, int64_t row_bytes) {
  const int n = mesh_.size(), me = mesh_.rank();
  std::vector<Part> sends, recvs;
  const char* in = static_cast<const char*>(input);
  char* out = static_cast<char*>(output);
  for (int r = 0; r < n; ++r) {
    const int64_t send_bytes = send_rows[static_cast<size_t>(r)] * row_bytes;
    const int64_t recv_bytes = recv_rows[static_cast<size_t>(r)] * row_bytes;
    if (r == me) {
      if (send_bytes > 0) std::memcpy(out, in, static_cast<size_t>(send_bytes));
    } else {
      sends.push_back({r, const_cast<char*>(in), send_bytes});
      recvs.push_back({r, out, recv_bytes});
    }
    in += send_bytes;
    out += recv_bytes;
  }
  return exchange(sends, recvs);
}

Status TcpCollectives::reducescatter(const void* input, void* output, const std::vector<int64_t>& counts,
                                     DataType dtype, ReduceOp op) {
  const int n = mesh_.size(), me = mesh_.rank();
  const int64_t esize = dtype_size(dtype);
  const int64_t my_bytes = counts[static_cast<size_t>(me)] * esize;
  std::vector<char> theirs(static_cast<size_t>(my_bytes * n));  // rank r's contribution to my block at r
  std::vector<Part> sends, recvs;
  const char* in = static_cast<const char*>(input);
  const char* my_block = nullptr;
  for (int r = 0; r < n; ++r) {
    const int64_t bytes = counts[static_cast<size_t>(r)] * esize;
    if (r == me) {
      my_block = in;
    } else {
      sends.push_back({r, const_cast<char*>(in), bytes});
      recvs.push_back({r, theirs.data() + my_bytes * r, my_bytes});
    }
    in += bytes;
  }
  Status s = exchange(sends, recvs);
  if (!s.is_ok()) return s;
  auto block = [&](int r) { return r == me ? my_block : theirs.data() + my_bytes * r; };
  if (my_bytes > 0) std::memcpy(output, block(0), static_cast<size_t>(my_bytes));
  for (int r = 1; r < n; ++r) reduce_into(output, block(r), counts[static_cast<size_t>(me)], dtype, op);
  return Status::ok();
}

}  // namespace chorus::detail
