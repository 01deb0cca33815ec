#include "device/cuda/nccl_comm.h"

#include <algorithm>
#include <cstring>

#include "device/cuda/device_stream.h"
#include "device/cuda/gpu_errors.h"
#include "device/cuda/nccl_wait.h"

namespace chorus::detail::gpu {

std::string explain_init_failure(const Status& s, int device) {
  std::string msg = s.message();
  if (s.code() == StatusCode::kInvalidArgument)
    msg += " (NCCL refuses two ranks of one communicator on the same GPU: this rank uses GPU " +
           std::to_string(device) + "; give each rank its own GPU, or set CHORUS_GPU_OPERATIONS=staged)";
  return msg;
}

/// Bootstrap and topology discovery take seconds on a big node: the
/// creation gets at least a minute, whatever short operation timeout is set.
double init_seconds(double op_timeout_seconds) {
  return op_timeout_seconds > 0 ? std::max(op_timeout_seconds, 60.0) : 0;
}

Status nccl_comm_state(ncclComm_t comm, const std::string& name) {
  ncclResult_t result = ncclSuccess;
  const ncclResult_t r = ncclCommGetAsyncError(comm, &result);
  if (r != ncclSuccess) return nccl_status(r, "ncclCommGetAsyncError(" + name + ")", comm);
  if (result == ncclInProgress) return Status::in_progress();
  return nccl_status(result, "NCCL communicator " + name, comm);
}

Status NcclComm::create(Communicator& control, int rank, int size, int device, const std::string& name,
                        double timeout_seconds, std::unique_ptr<NcclComm>* out) {
  ncclUniqueId id;
  std::memset(&id, 0, sizeof(id));
  Status made = Status::ok();
  if (rank == 0) made = nccl_status(ncclGetUniqueId(&id), "ncclGetUniqueId");
  // Rank 0 broadcasts even when it failed (an all-zero id), so nobody waits
  // in the broadcast; ranks that got zeros fail below with the same cause.
  Status s = control.broadcast(&id, sizeof(id), 0);
  if (!s.is_ok()) return Status(s.code(), "broadcasting the NCCL unique id of " + name + ": " + s.message());
  if (!made.is_ok()) return made;
  const ncclUniqueId zero{};
  if (std::memcmp(&id, &zero, sizeof(id)) == 0)
    return Status::unknown_error("rank 0 could not make the NCCL unique id of " + name + " (ncclGetUniqueId failed there)");
  s = cuda_status(cudaSetDevice(device), "cudaSetDevice(" + std::to_string(device) + ")");
  if (!s.is_ok()) return s;
  std::unique_ptr<NcclComm> comm(new NcclComm());
  comm->name_ = name;
  comm->rank_ = rank;
  comm->size_ = size;
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  // Non-blocking: no NCCL call may wait for peers without a deadline
  // (device/cuda/nccl_wait.h). Every call that returns ncclInProgress is waited for.
  config.blocking = 0;
  config.commName = comm->name_.c_str();
  const std::string call = "ncclCommInitRankConfig(" + name + ")";
  const ncclResult_t r = ncclCommInitRankConfig(&comm->comm_, size, id, rank, &config);
  s = r == ncclInProgress ? Status::ok() : nccl_status(r, call);  // no communicator to ask after a failed init
  if (s.is_ok() && r == ncclInProgress)
    s = wait_in_progress([&] { return nccl_comm_state(comm->comm_, name); }, OpDeadline::after(init_seconds(timeout_seconds)), call);
  if (!s.is_ok()) {
    comm->abort();  // a half-made communicator: Abort frees it (null is a no-op)
    return Status(s.code(), explain_init_failure(s, device));
  }
  *out = std::move(comm);
  return Status::ok();
}

Status NcclComm::split(NcclComm& parent, int color, int key, const std::string& name, double timeout_seconds,
                       std::unique_ptr<NcclComm>* out) {
  std::unique_ptr<NcclComm> comm(new NcclComm());
  comm->name_ = name;
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;  // as create(): waited for under a deadline
  config.commName = comm->name_.c_str();
  const std::string call = "ncclCommSplit(" + parent.name() + " -> " + name + ")";
  const OpDeadline deadline = OpDeadline::after(init_seconds(timeout_seconds));
  const ncclResult_t r = ncclCommSplit(parent.get(), color, key, &comm->comm_, &config);
  Status s = r == ncclInProgress || r == ncclSuccess ? Status::ok() : nccl_status(r, call, parent.get());
  // Non-blocking, NCCL's own thread writes the new handle (null until then)
  // when the split's job ends: only then is there a communicator to ask.
  auto handle = [&comm] { return __atomic_load_n(&comm->comm_, __ATOMIC_ACQUIRE); };
  // (Even when the call returned ncclSuccess: on the H200 it did, at one
  // rank, and the handle came later.)
  if (s.is_ok())
    s = wait_in_progress([&] { return handle() != nullptr ? Status::ok() : Status::in_progress(); }, deadline, call);
  if (s.code() == StatusCode::kTimeout) {
    comm.release();  // NOLINT: deliberate leak: NCCL's job may still write the handle into it
    return s;
  }
  if (s.is_ok()) s = wait_in_progress([&] { return nccl_comm_state(comm->comm_, name); }, deadline, call);
  if (s.is_ok()) s = nccl_status(ncclCommCount(comm->comm_, &comm->size_), "ncclCommCount(" + name + ")");
  if (s.is_ok()) s = nccl_status(ncclCommUserRank(comm->comm_, &comm->rank_), "ncclCommUserRank(" + name + ")");
  if (!s.is_ok()) {
    comm->abort();
    return s;
  }
  *out = std::move(comm);
  return Status::ok();
}

NcclComm::~NcclComm() { abort(); }

Status NcclComm::async_error() const {
  if (aborted_.load()) return Status::aborted("NCCL communicator " + name_ + " was aborted");
  if (comm_ == nullptr) return Status::ok();
  const Status s = nccl_comm_state(comm_, name_ + " (asynchronous error)");
  return s.code() == StatusCode::kInProgress ? Status::ok() : s;  // a call still connecting is no error
}

Status NcclComm::finalize_and_destroy(double timeout_seconds) {
  if (comm_ == nullptr) return Status::ok();
  const std::string call = "ncclCommFinalize(" + name_ + ")";
  const ncclResult_t r = ncclCommFinalize(comm_);
  Status s = r == ncclInProgress ? Status::ok() : nccl_status(r, call, comm_);
  if (s.is_ok() && r == ncclInProgress)
    s = wait_in_progress([&] { return nccl_comm_state(comm_, name_); }, OpDeadline::after(timeout_seconds), call);
  if (!s.is_ok()) {
    abort();
    return s;
  }
  s = nccl_status(ncclCommDestroy(comm_), "ncclCommDestroy(" + name_ + ")");
  comm_ = nullptr;
  return s;
}

void NcclComm::abort() {
  aborted_ = true;
  if (comm_ == nullptr) return;
  ncclCommAbort(comm_);  // nothing to report: the communicator is gone either way
  comm_ = nullptr;
}

}  // namespace chorus::detail::gpu
