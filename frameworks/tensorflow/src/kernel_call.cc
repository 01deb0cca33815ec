#include "kernel_call.h"

#include "chorus_functions.h"

namespace chorus::tf {

using adapter::chorus_functions;
using adapter::ChorusFunctions;

KernelCall::~KernelCall() {
  for (TF_Tensor* t : held_) tensorflow_c_api().api.TF_DeleteTensor(t);
}

void KernelCall::hold(TF_Tensor* tensor) {
  if (tensor == nullptr) return;
  std::lock_guard<std::mutex> lock(mu_);
  held_.push_back(tensor);
}

int KernelCall::code_of(int chorus_rc) {
  switch (chorus_rc) {
    case CHORUS_ERR_INVALID_ARGUMENT:
    case CHORUS_ERR_PRECONDITION: return kTfFailedPrecondition;
    case CHORUS_ERR_ABORTED: return kTfAborted;
    case CHORUS_ERR_TIMEOUT: return kTfDeadlineExceeded;
    case CHORUS_ERR_INTERNAL: return kTfInternal;
    default: return kTfUnknown;
  }
}

void KernelCall::wait_for(int rc, const std::vector<int64_t>& handles,
                          const std::function<void(int64_t)>& on_completed) {
  const ChorusFunctions& chorus = *chorus_functions();
  if (rc < 0) {
    fail(code_of(rc), chorus.chorus_last_error());
    return;
  }
  // Every handle is waited for, also after one failed: each must be released.
  for (int64_t h : handles) {
    if (on_completed && chorus.chorus_wait_completed(h, 1e9) == 1) on_completed(h);
    const int waited = chorus.chorus_wait(h);
    if (waited < 0) fail(code_of(waited), chorus.chorus_last_error());
  }
}

void KernelCall::fail(int code, const std::string& message) {
  if (failed_) return;  // the first error names the cause
  failed_ = true;
  const CApi& tf = tensorflow_c_api().api;
  TfStatus status;
  tf.TF_SetStatus(status.get(), code, message.c_str());
  tf.TF_OpKernelContext_Failure(ctx_, status.get());
}

}  // namespace chorus::tf
