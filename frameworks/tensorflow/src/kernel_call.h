#pragma once
// One run of a kernel: the TensorFlow tensors it keeps alive while Chorus
// reads and writes them, the outputs Chorus allocates during the
// operation, and the wait for Chorus's handles, whose first error becomes
// the kernel's. The kernels are synchronous: TensorFlow's C API passes an
// async kernel's done callback as the address of a std::function that
// lives only until ComputeAsync returns (tensorflow/c/kernels.cc), so it
// cannot be called later from Chorus's thread.
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "tf_c_api.h"

namespace chorus::tf {

class KernelCall;

// Where Chorus's allocation callback puts output `index` of a call.
struct OutputSlot {
  KernelCall* call;
  int index;
  int tf_type;
};

class KernelCall {
 public:
  explicit KernelCall(TF_OpKernelContext* ctx) : ctx_(ctx) {}
  ~KernelCall();
  KernelCall(const KernelCall&) = delete;
  KernelCall& operator=(const KernelCall&) = delete;
  TF_OpKernelContext* context() const { return ctx_; }

  // Kept until the call ends (inputs read, outputs written by Chorus).
  void hold(TF_Tensor* tensor);
  // Slots for outputs allocated during the operation (chorus_alloc_fn's
  // user data); reserve before taking pointers.
  std::vector<OutputSlot>& output_slots() { return slots_; }

  // Waits for `handles`, each released after `on_completed(handle)` (which
  // reads what a completed handle holds: alltoall's received splits).
  // `rc` < 0 (the submitting call failed): fails with the library's error.
  void wait_for(int rc, const std::vector<int64_t>& handles,
                const std::function<void(int64_t)>& on_completed = nullptr);
  // Fails the kernel with this error (TensorFlow's code, the message).
  void fail(int code, const std::string& message);

  // The TensorFlow code for a Chorus error: Horovod's ops report a failed
  // negotiation (a mismatch across ranks, a refusal) as FailedPrecondition.
  static int code_of(int chorus_rc);

 private:
  TF_OpKernelContext* const ctx_;
  std::mutex mu_;  // hold() runs on Chorus's thread too (allocation callbacks)
  std::vector<TF_Tensor*> held_;
  std::vector<OutputSlot> slots_;
  bool failed_ = false;
};

}  // namespace chorus::tf
