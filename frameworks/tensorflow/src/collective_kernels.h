#pragma once
// The kernels of Chorus's TensorFlow ops (ops named in op_registration.cc):
// each reads its attributes once (create) and, per run, hands its tensors
// to Chorus through the C ABI and waits for the result (KernelCall).
#include "tf_c_api.h"

namespace chorus::tf {

void* create_reduce_kernel(TF_OpKernelConstruction* ctx);     // allreduce, reducescatter
void* create_gather_kernel(TF_OpKernelConstruction* ctx);     // allgather, alltoall
void* create_broadcast_kernel(TF_OpKernelConstruction* ctx);  // broadcast
void* create_set_kernel(TF_OpKernelConstruction* ctx);        // barrier, join
void delete_kernel(void* kernel);

void compute_allreduce(void* kernel, TF_OpKernelContext* ctx);
void compute_reducescatter(void* kernel, TF_OpKernelContext* ctx);
void compute_allgather(void* kernel, TF_OpKernelContext* ctx);
void compute_alltoall(void* kernel, TF_OpKernelContext* ctx);
void compute_broadcast(void* kernel, TF_OpKernelContext* ctx);
void compute_barrier(void* kernel, TF_OpKernelContext* ctx);
void compute_join(void* kernel, TF_OpKernelContext* ctx);

}  // namespace chorus::tf
