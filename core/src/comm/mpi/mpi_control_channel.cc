#include "comm/mpi/mpi_control_channel.h"

#include <chrono>
#include <thread>

namespace chorus::detail {

namespace {
constexpr int kRequestTag = 1;
constexpr int kResponseTag = 2;
}  // namespace

Status MpiControlChannel::post_send(std::shared_ptr<const std::string> bytes, int dest, int tag) {
  pending_.push_back({std::move(bytes), MPI_REQUEST_NULL});
  PendingSend& p = pending_.back();
  if (MPI_Isend(p.bytes->data(), static_cast<int>(p.bytes->size()), MPI_BYTE, dest, tag, comm_,
                &p.request) != MPI_SUCCESS) {
    pending_.pop_back();
    return Status::unknown_error("MPI_Isend of a control message to rank " + std::to_string(dest) + " failed");
  }
  return Status::ok();
}

void MpiControlChannel::reap_sends() {
  for (auto it = pending_.begin(); it != pending_.end();) {
    int done = 0;
    MPI_Test(&it->request, &done, MPI_STATUS_IGNORE);
    it = done ? pending_.erase(it) : std::next(it);
  }
}

Status MpiControlChannel::send_to_coordinator(std::string bytes) {
  reap_sends();
  return post_send(std::make_shared<const std::string>(std::move(bytes)), 0, kRequestTag);
}

Status MpiControlChannel::send_to_workers(const std::string& bytes) {
  reap_sends();
  auto shared = std::make_shared<const std::string>(bytes);
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    Status s = post_send(shared, r, kResponseTag);
    if (!s.is_ok()) return s;
  }
  return Status::ok();
}

bool MpiControlChannel::poll(int source, int tag, int* from, std::string* bytes) {
  int flag = 0;
  MPI_Status status;
  MPI_Iprobe(source, tag, comm_, &flag, &status);
  if (!flag) return false;
  int count = 0;
  MPI_Get_count(&status, MPI_BYTE, &count);
  bytes->resize(static_cast<size_t>(count));
  MPI_Recv(bytes->data(), count, MPI_BYTE, status.MPI_SOURCE, status.MPI_TAG, comm_, MPI_STATUS_IGNORE);
  if (from) *from = status.MPI_SOURCE;
  return true;
}

bool MpiControlChannel::poll_from_workers(int* from_rank, std::string* bytes) {
  reap_sends();
  return poll(MPI_ANY_SOURCE, kRequestTag, from_rank, bytes);
}

bool MpiControlChannel::poll_from_coordinator(std::string* bytes) {
  reap_sends();
  return poll(0, kResponseTag, nullptr, bytes);
}

void MpiControlChannel::drain_incoming() {
  std::string ignored;
  while (poll(MPI_ANY_SOURCE, MPI_ANY_TAG, nullptr, &ignored)) {
  }
}

bool MpiControlChannel::close(std::chrono::milliseconds bound) {
  // Every rank gets here after executing the shutdown response. Finish our
  // sends (receiving whatever is still addressed to us meanwhile), then meet
  // the others in a barrier so nobody frees the communicator while a message
  // is on its way. Wait by polling with short sleeps, not inside MPI, and no
  // longer than `bound`: a stopped or dead rank never gets here, and its
  // sends and the barrier then stay pending (the caller ends the job).
  const auto deadline = std::chrono::steady_clock::now() + bound;
  const auto nap = std::chrono::microseconds(50);
  auto in_time = [&] { return std::chrono::steady_clock::now() < deadline; };
  while (!pending_.empty()) {
    drain_incoming();
    reap_sends();
    if (pending_.empty()) break;
    if (!in_time()) return false;
    std::this_thread::sleep_for(nap);
  }
  MPI_Request barrier;
  MPI_Ibarrier(comm_, &barrier);
  int done = 0;
  while (!done) {
    drain_incoming();
    MPI_Test(&barrier, &done, MPI_STATUS_IGNORE);
    if (done) break;
    if (!in_time()) return false;
    std::this_thread::sleep_for(nap);
  }
  drain_incoming();
  return true;
}

}  // namespace chorus::detail
