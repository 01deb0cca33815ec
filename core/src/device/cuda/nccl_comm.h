#pragma once
// One NCCL communicator of the GPU data plane: its creation (the unique id
// made by rank 0 and carried to the others over the backend's own broadcast),
// its asynchronous error, and its two ends: Finalize then Destroy at a normal
// shutdown, Abort after a fault. Used only from the launching (background)
// thread, except async_error(), which NCCL allows from any thread.

#include <atomic>
#include <memory>
#include <string>

#include <nccl.h>

#include "chorus/status.h"
#include "comm/communicator.h"
#include "device/cuda/completion_poller.h"

namespace chorus::detail::gpu {

class NcclComm {
 public:
  /// Collective over every rank of `control`'s backend, at the same place
  /// of the response order on each (the first device response of the set):
  /// rank 0 calls ncclGetUniqueId, broadcasts the 128 bytes over `control`
  /// (the transport's own broadcast: one small collective per communicator
  /// and job), then every rank calls ncclCommInitRankConfig on `device`,
  /// non-blocking (device/cuda/nccl_wait.h), waited for up to `timeout_seconds`
  /// but at least 60 s (0: no limit; init_seconds); on a timeout or error the half-made communicator is
  /// aborted. `name` goes into NCCL's logs and into messages.
  static Status create(Communicator& control, int rank, int size, int device, const std::string& name,
                       double timeout_seconds, std::unique_ptr<NcclComm>* out);
  /// Collective over every rank of `parent`, in the same order on each:
  /// ncclCommSplit into the ranks that pass the same `color`, numbered by
  /// `key`; non-blocking, waited for as create() waits.
  static Status split(NcclComm& parent, int color, int key, const std::string& name, double timeout_seconds,
                      std::unique_ptr<NcclComm>* out);
  /// Aborts if neither finalize_and_destroy() nor abort() ran.
  ~NcclComm();
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;

  ncclComm_t get() const { return comm_; }
  const std::string& name() const { return name_; }
  int rank() const { return rank_; }
  int size() const { return size_; }
  /// OK, or ncclCommGetAsyncError's error as a message naming the communicator.
  Status async_error() const;
  /// Normal shutdown: ncclCommFinalize (flushes what was issued; waited
  /// for up to `timeout_seconds`), then ncclCommDestroy; Abort on a failure.
  Status finalize_and_destroy(double timeout_seconds);
  /// After a fault: ncclCommAbort, which ends its kernels on the device.
  /// From then on async_error() reports "aborted" (nothing completes OK on it).
  /// The completion thread must have stopped polling it first
  /// (CompletionPoller::fail_all): the handle is freed here.
  void abort();
  /// The communicator's asynchronous error as the completion thread polls it.
  AsyncErrorSource* error_source() { return &errors_; }

 private:
  NcclComm() : errors_(this) {}
  class Errors final : public AsyncErrorSource {
   public:
    explicit Errors(const NcclComm* comm) : comm_(comm) {}
    Status poll() override { return comm_->async_error(); }

   private:
    const NcclComm* comm_;
  };
  ncclComm_t comm_ = nullptr;
  std::atomic<bool> aborted_{false};
  std::string name_;
  int rank_ = 0, size_ = 1;
  Errors errors_;
};

/// The message for ncclCommInitRankConfig's ncclInvalidUsage when two ranks
/// share a GPU ("Duplicate GPU detected"): use CHORUS_GPU_OPERATIONS=staged.
std::string explain_init_failure(const Status& s, int device);

/// How long a communicator's creation may take: the operation timeout, at least 60 s.
double init_seconds(double op_timeout_seconds);

/// ncclCommGetAsyncError as wait_in_progress polls it: OK, in_progress
/// (ncclInProgress), or the error naming `name`.
Status nccl_comm_state(ncclComm_t comm, const std::string& name);

}  // namespace chorus::detail::gpu
