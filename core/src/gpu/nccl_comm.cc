#include "gpu/nccl_comm.h"

#include <cstring>

#include "gpu/device_stream.h"
#include "gpu/gpu_errors.h"

namespace chorus::detail::gpu {

std::string explain_init_failure(const Status& s, int device) {
  std::string msg = s.message();
  if (s.code() == StatusCode::kInvalidArgument)
    msg += " (NCCL refuses two ranks of one communicator on the same GPU: this rank uses GPU " +
           std::to_string(device) + "; give each rank its own GPU, or set CHORUS_GPU_OPERATIONS=staged)";
  return msg;
}

Status NcclComm::create(Communicator& control, int rank, int size, int device, const std::string& name,
                        std::unique_ptr<NcclComm>* out) {
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
  config.blocking = 1;  // non-blocking init hung with NCCL 2.26 (PyTorch made it opt-in)
  config.commName = comm->name_.c_str();
  s = nccl_status(ncclCommInitRankConfig(&comm->comm_, size, id, rank, &config), "ncclCommInitRankConfig(" + name + ")");
  if (!s.is_ok()) {
    comm->comm_ = nullptr;
    return Status(s.code(), explain_init_failure(s, device));
  }
  *out = std::move(comm);
  return Status::ok();
}

NcclComm::~NcclComm() { abort(); }

Status NcclComm::async_error() const {
  if (comm_ == nullptr) return Status::ok();
  ncclResult_t result = ncclSuccess;
  const ncclResult_t r = ncclCommGetAsyncError(comm_, &result);
  if (r != ncclSuccess) return nccl_status(r, "ncclCommGetAsyncError(" + name_ + ")", comm_);
  if (result == ncclSuccess || result == ncclInProgress) return Status::ok();
  return nccl_status(result, "NCCL communicator " + name_ + " (asynchronous error)", comm_);
}

Status NcclComm::finalize_and_destroy() {
  if (comm_ == nullptr) return Status::ok();
  Status s = nccl_status(ncclCommFinalize(comm_), "ncclCommFinalize(" + name_ + ")", comm_);
  if (!s.is_ok()) {
    abort();
    return s;
  }
  s = nccl_status(ncclCommDestroy(comm_), "ncclCommDestroy(" + name_ + ")");
  comm_ = nullptr;
  return s;
}

void NcclComm::abort() {
  if (comm_ == nullptr) return;
  ncclCommAbort(comm_);  // nothing to report: the communicator is gone either way
  comm_ = nullptr;
}

}  // namespace chorus::detail::gpu
