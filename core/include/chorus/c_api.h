/* \file c_api.h
 * The Chorus C ABI: a stable, exception-free surface for frameworks and
 * languages that do not speak C++. Every function returns 0 (or the value it
 * is asked for) on success and a negative chorus_error code on failure;
 * chorus_last_error() then gives this thread's message. No C++ exception
 * ever crosses this boundary.
 *
 * ABI versioning: CHORUS_ABI_VERSION grows when a function, an error code or an enum value
 * is added, or when what a published function does with an argument changes; a
 * function never changes its signature once published. Check
 * chorus_abi_version() >= the version you compiled against.
 */
#ifndef CHORUS_C_API_H_
#define CHORUS_C_API_H_

#include <stdint.h>

#include "chorus/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What each ABI version added:
 *   2: allgather, reducescatter, alltoall, barrier
 *   3: process sets
 *   4: chorus_join, shared-host memory
 *   5: CHORUS_ERR_INTERNAL
 *   6: device buffers (*_on_device)
 *   7: grouped allgather and reducescatter
 *   8: chorus_start_timeline, chorus_stop_timeline
 *   9: CHORUS_ADASUM
 *   10: a rank's own bad arguments to a collective return 0 and fail at chorus_wait on every rank
 *       (before: an error at the call, on that rank only)
 *   11: CHORUS_INT16
 *   12: chorus_is_homogeneous, chorus_mpi_built, chorus_cuda_built, chorus_nccl_built, chorus_mpi_enabled,
 *       chorus_tcp_enabled
 *   13: chorus_wait_timeout, chorus_wait_completed, chorus_allreduce_shaped_async,
 *       chorus_grouped_allreduce_async, chorus_refuse_async, chorus_refuse_group_async
 *   14: chorus_elastic_enabled, chorus_elastic_host_updates
 *   15: chorus_is_running; chorus_is_initialized as Horovod's
 *   16: chorus_on_complete
 *   17: chorus_rendezvous_* (an elastic rendezvous held by the caller's own driver)
 *   18: chorus_rendezvous_retire, chorus_rendezvous_left_count, chorus_rendezvous_left (graceful removal)
 */
#define CHORUS_ABI_VERSION 18

/* In C++ the enums below get `int` as their fixed underlying type, so any
 * integer a C caller passes (an enum argument is an int on every supported
 * ABI) is a value the library may hold and check; without it, a value such
 * as 42 would be undefined behaviour before any check could run. Arguments
 * outside the listed values fail with CHORUS_ERR_INVALID_ARGUMENT (for a
 * collective, through its handle: see "Bad arguments" below). */
#ifdef __cplusplus
#define CHORUS_ENUM_BASE : int
#else
#define CHORUS_ENUM_BASE
#endif

typedef enum chorus_dtype_e CHORUS_ENUM_BASE {
  CHORUS_UINT8 = 0,
  CHORUS_INT8 = 1,
  CHORUS_INT32 = 2,
  CHORUS_INT64 = 3,
  CHORUS_FLOAT16 = 4,
  CHORUS_BFLOAT16 = 5,
  CHORUS_FLOAT32 = 6,
  CHORUS_FLOAT64 = 7,
  CHORUS_BOOL = 8,
  CHORUS_INT16 = 9 /* ABI 11 */
} chorus_dtype;

typedef enum chorus_reduce_op_e CHORUS_ENUM_BASE {
  CHORUS_SUM = 0,
  CHORUS_AVERAGE = 1,
  CHORUS_MIN = 2,
  CHORUS_MAX = 3,
  CHORUS_PRODUCT = 4,
  CHORUS_ADASUM = 5 /* float types, allreduce only (ABI 9) */
} chorus_reduce_op;

/* Error codes (negative return values). */
typedef enum {
  CHORUS_OK = 0,
  CHORUS_ERR_UNKNOWN = -1,
  CHORUS_ERR_PRECONDITION = -2,   /* not initialized, shut down */
  CHORUS_ERR_ABORTED = -3,        /* runtime shut down before the operation completed */
  CHORUS_ERR_INVALID_ARGUMENT = -4,
  CHORUS_ERR_TIMEOUT = -6,
  CHORUS_ERR_INTERNAL = -7,       /* a broken invariant inside Chorus (a bug); ABI 5 */
  CHORUS_ERR_UNKNOWN_HANDLE = -100
} chorus_error;

/* Lifecycle. chorus_init() reads settings from the environment. */
CHORUS_API int chorus_init(void);
CHORUS_API int chorus_shutdown(void);
/* 1 from this process's chorus_init() until its own chorus_shutdown(), as Horovod's
 * horovod_is_initialized: another rank's shutdown does not change it (calls then fail
 * naming that rank). ABI 15; before, it turned 0 when any rank shut down. */
CHORUS_API int chorus_is_initialized(void);
/* 1 while the runtime runs (no rank has shut it down); chorus_init() after that starts
 * a new one. ABI 15. */
CHORUS_API int chorus_is_running(void);

/* Place in the job (>= 0), or a negative error code before init. */
CHORUS_API int chorus_rank(void);
CHORUS_API int chorus_size(void);
CHORUS_API int chorus_local_rank(void);
CHORUS_API int chorus_local_size(void);
CHORUS_API int chorus_cross_rank(void);
CHORUS_API int chorus_cross_size(void);
/* 1 when every host runs the same number of ranks, else 0; a negative
 * error code before init. (ABI version 12) */
CHORUS_API int chorus_is_homogeneous(void);

/* What the library was built with, any time: 1 or 0; chorus_nccl_built()
 * returns the NCCL_VERSION_CODE compiled against (22809 for 2.28.9), 0
 * without NCCL. What carries the running job: 1 or 0 (0 before init).
 * Horovod's mpi_built, cuda_built, nccl_built, mpi_enabled, gloo_enabled.
 * (ABI version 12) */
CHORUS_API int chorus_mpi_built(void);
CHORUS_API int chorus_cuda_built(void);
CHORUS_API int chorus_nccl_built(void);

/* Elastic jobs (docs/elastic.md). chorus_elastic_enabled: 1 when this
 * process is a member of an elastic job (chorusrun's elastic mode sets
 * CHORUS_ELASTIC_ADDR; without it, CHORUS_RDZV_BACKEND=etcd), else 0; any time. chorus_elastic_host_updates: what
 * the job's rendezvous said about the hosts since this process's world
 * formed, on this rank only: *generation (0: nothing) and *kinds (1: hosts
 * added, 2: removed); never waits. A reset is chorus_shutdown() then
 * chorus_init(): init joins the next world. */
CHORUS_API int chorus_elastic_enabled(void);
CHORUS_API int chorus_elastic_host_updates(int64_t* generation, int* kinds);

/* An elastic job's rendezvous held by a driver of the caller's own, as
 * chorusrun holds one (chorus/elastic_rendezvous.h; docs/elastic.md): the
 * driver starts each worker with CHORUS_ELASTIC_ADDR=address:port,
 * CHORUS_ELASTIC_MEMBER=<id>, CHORUS_JOB_ID=job_id and the job's secret,
 * calls expect(id) when it starts one, gone(id) when one ends, and run_for
 * in its loop. chorus_rendezvous_start: listens on a free port of every
 * interface; `address` is where workers reach it; max_np 0: no maximum;
 * min_np_name and timeout_name say how failures name min_np and
 * elastic_timeout_seconds (NULL: chorusrun's --min-np, --elastic-timeout).
 * chorus_rendezvous_port: the port, or a negative code. chorus_rendezvous_hosts_changed:
 * kinds 1 added, 2 removed, told to the running members. chorus_rendezvous_run_for: accepts,
 * reads and answers for up to `seconds`; *worlds_formed: worlds so far; *late_count: members to
 * stop (they did not ask again in time), each chorus_rendezvous_late(r, i) (NULL out of range;
 * valid until the next run_for); CHORUS_ERR_ABORTED, with the reason in chorus_last_error(),
 * when no world can form. One thread drives a rendezvous. (ABI version 17)
 * chorus_rendezvous_retire: the member leaves gracefully (its host was
 * removed): 1 when it is in the running world (it finishes its step; tell
 * the world with chorus_rendezvous_hosts_changed(r, 2)), 0 when it is in no
 * world (end it now), a negative code on bad arguments. After each run_for,
 * chorus_rendezvous_left_count retired members asked for the next world
 * (each chorus_rendezvous_left(r, i), NULL out of range): end them now; no
 * world counts them. (ABI version 18) */
typedef struct chorus_rendezvous chorus_rendezvous;
CHORUS_API int chorus_rendezvous_start(const char* address, const char* job_id, const char* secret, int min_np,
                                       int max_np, double elastic_timeout_seconds, double join_grace_seconds,
                                       const char* min_np_name, const char* timeout_name, chorus_rendezvous** out);
CHORUS_API int chorus_rendezvous_port(const chorus_rendezvous* r);
CHORUS_API int chorus_rendezvous_expect(chorus_rendezvous* r, const char* member);
CHORUS_API int chorus_rendezvous_gone(chorus_rendezvous* r, const char* member);
CHORUS_API int chorus_rendezvous_hosts_changed(chorus_rendezvous* r, int kinds);
CHORUS_API int chorus_rendezvous_run_for(chorus_rendezvous* r, double seconds, int64_t* worlds_formed, int* late_count);
CHORUS_API const char* chorus_rendezvous_late(const chorus_rendezvous* r, int index);
CHORUS_API int chorus_rendezvous_retire(chorus_rendezvous* r, const char* member);
CHORUS_API int chorus_rendezvous_left_count(const chorus_rendezvous* r);
CHORUS_API const char* chorus_rendezvous_left(const chorus_rendezvous* r, int index);
CHORUS_API void chorus_rendezvous_stop(chorus_rendezvous* r);
CHORUS_API int chorus_mpi_enabled(void);
CHORUS_API int chorus_tcp_enabled(void);

/* Asynchronous collectives over host memory the caller keeps alive until the
 * handle completes. `input == output` is in place. On success *handle is set.
 * Bad arguments: what one rank alone may get wrong (count, dtype, op, a NULL
 * input, buffer, shape, splits or allocation callback, a device index, a
 * CUDA buffer without GPU support) is refused through negotiation, so the
 * other ranks do not wait for this one: the call returns 0 and chorus_wait
 * returns CHORUS_ERR_INVALID_ARGUMENT on every rank, with a message naming
 * the refusing ranks and why. A NULL name or handle fails the call at once. */
CHORUS_API int chorus_allreduce_async(const char* name, const void* input, void* output, int64_t count,
                                      chorus_dtype dtype, chorus_reduce_op op, double prescale,
                                      double postscale, int64_t* handle);
CHORUS_API int chorus_broadcast_async(const char* name, void* buffer, int64_t count, chorus_dtype dtype,
                                      int root_rank, int64_t* handle);

/* Allocates the output of an operation whose size is known only after the
 * ranks agreed (allgather): `bytes` bytes for a tensor of `ndim` dimensions
 * `shape`. Return the memory (kept alive by the caller until the handle
 * completed), or NULL to fail the operation. Called on Chorus's background
 * thread; must not call back into Chorus. */
typedef void* (*chorus_alloc_fn)(void* user_data, int64_t bytes, const int64_t* shape, int ndim);

/* Allgather along the first dimension: `input` has `ndim` >= 1 dimensions
 * `shape` (the first may differ per rank, the others must agree); the
 * output, every rank's rows in rank order, goes to memory from `alloc`.
 * (ABI version 2) */
CHORUS_API int chorus_allgather_async(const char* name, const void* input, const int64_t* shape, int ndim,
                                      chorus_dtype dtype, chorus_alloc_fn alloc, void* user_data,
                                      int64_t* handle);
/* Reducescatter along the first dimension (same shape on every rank): rank r
 * gets its block of rows of the reduced tensor (the first rows mod n ranks one
 * row more), in memory from `alloc`. (ABI version 2) */
CHORUS_API int chorus_reducescatter_async(const char* name, const void* input, const int64_t* shape, int ndim,
                                          chorus_dtype dtype, chorus_reduce_op op, double prescale, double postscale,
                                          chorus_alloc_fn alloc, void* user_data, int64_t* handle);
/* Alltoall: rank i sends splits[j] rows of its first dimension to rank j
 * (splits NULL and nsplits 0: equal splits); the received rows, in rank
 * order, go to memory from `alloc`. (ABI version 2) */
CHORUS_API int chorus_alltoall_async(const char* name, const void* input, const int64_t* shape, int ndim,
                                     chorus_dtype dtype,
                                     const int64_t* splits, int nsplits, chorus_alloc_fn alloc, void* user_data,
                                     int64_t* handle);
/* After chorus_poll(handle) returned 1 and before chorus_wait: the rows an
 * alltoall received from each rank, into `splits` (room for `n`); returns
 * their number. (ABI version 2) */
CHORUS_API int chorus_received_splits(int64_t handle, int64_t* splits, int n);
/* Blocks until every rank called its matching chorus_barrier(). (ABI version 2) */
CHORUS_API int chorus_barrier(void);

/* Process sets (ABI version 3). A process set is a subset of the ranks that
 * runs collectives among its members only, at the same time as other sets;
 * the global set (every rank) has id 0. chorus_add_process_set registers the
 * `nranks` global ranks `ranks` (every rank of the job calls it, in the same
 * order, with the same ranks) and returns the new set's id (> 0) once it is
 * ready, or an error code. chorus_remove_process_set ends a set's
 * collectives on every member (their pending operations fail). */
CHORUS_API int chorus_add_process_set(const int* ranks, int nranks);
CHORUS_API int chorus_remove_process_set(int process_set_id);
/* This rank's rank inside the set, and the set's size; CHORUS_ERR_INVALID_ARGUMENT
 * for an unknown set or, for the rank, when this rank is not a member. */
CHORUS_API int chorus_process_set_rank(int process_set_id);
CHORUS_API int chorus_process_set_size(int process_set_id);

/* The collectives above, run among the members of process set
 * `process_set_id` (0: every rank). A broadcast's root is a global rank;
 * alltoall's splits have one entry per member; outputs are in member order.
 * Called from a rank outside the set: CHORUS_ERR_INVALID_ARGUMENT, with a
 * message naming the set and the rank. (ABI version 3) */
CHORUS_API int chorus_allreduce_async_in_set(int process_set_id, const char* name, const void* input, void* output,
                                             int64_t count, chorus_dtype dtype, chorus_reduce_op op, double prescale,
                                             double postscale, int64_t* handle);
CHORUS_API int chorus_broadcast_async_in_set(int process_set_id, const char* name, void* buffer, int64_t count,
                                             chorus_dtype dtype, int root_rank, int64_t* handle);
CHORUS_API int chorus_allgather_async_in_set(int process_set_id, const char* name, const void* input,
                                             const int64_t* shape,
                                             int ndim, chorus_dtype dtype, chorus_alloc_fn alloc, void* user_data,
                                             int64_t* handle);
CHORUS_API int chorus_reducescatter_async_in_set(int process_set_id, const char* name, const void* input,
                                                 const int64_t* shape, int ndim, chorus_dtype dtype,
                                                 chorus_reduce_op op,
                                                 double prescale, double postscale, chorus_alloc_fn alloc,
                                                 void* user_data,
                                                 int64_t* handle);
CHORUS_API int chorus_alltoall_async_in_set(int process_set_id, const char* name, const void* input,
                                            const int64_t* shape,
                                            int ndim, chorus_dtype dtype, const int64_t* splits, int nsplits,
                                            chorus_alloc_fn alloc, void* user_data, int64_t* handle);
CHORUS_API int chorus_barrier_in_set(int process_set_id);

/* Device buffers (ABI version 6). `input`, `output` and `buffer` are device
 * pointers on CUDA device `device` (>= 0), written by work queued on `stream`
 * (a cudaStream_t; NULL: the default stream). When called, Chorus records the
 * buffers' ready point on `stream`; its own device work waits for that point
 * on the device, never blocking the caller. Read the results after
 * chorus_wait (or chorus_poll returning 1): the handle completes once they
 * are on the device. `process_set_id` 0 is the global set. Outputs sized by
 * the negotiation come from `alloc`, which must return memory on `device`:
 * Chorus calls it on a thread of its own (the staged worker, or the
 * background thread on NCCL; not the caller's), with `device` current (cudaSetDevice), so a plain cudaMalloc
 * there lands on `device`.
 * A build of Chorus without GPU support fails the handle (on every rank)
 * with CHORUS_ERR_INVALID_ARGUMENT and a message naming the tensor. */
CHORUS_API int chorus_allreduce_async_on_device(int process_set_id, const char* name, const void* input,
                                                void* output, int64_t count, chorus_dtype dtype,
                                                chorus_reduce_op op, double prescale, double postscale, int device,
                                                void* stream, int64_t* handle);
CHORUS_API int chorus_broadcast_async_on_device(int process_set_id, const char* name, void* buffer, int64_t count,
                                                chorus_dtype dtype, int root_rank, int device, void* stream,
                                                int64_t* handle);
CHORUS_API int chorus_allgather_async_on_device(int process_set_id, const char* name, const void* input,
                                                const int64_t* shape, int ndim, chorus_dtype dtype, int device,
                                                void* stream, chorus_alloc_fn alloc, void* user_data,
                                                int64_t* handle);
CHORUS_API int chorus_reducescatter_async_on_device(int process_set_id, const char* name, const void* input,
                                                    const int64_t* shape, int ndim, chorus_dtype dtype,
                                                    chorus_reduce_op op, double prescale, double postscale,
                                                    int device, void* stream, chorus_alloc_fn alloc,
                                                    void* user_data, int64_t* handle);
CHORUS_API int chorus_alltoall_async_on_device(int process_set_id, const char* name, const void* input,
                                               const int64_t* shape, int ndim, chorus_dtype dtype,
                                               const int64_t* splits, int nsplits, int device, void* stream,
                                               chorus_alloc_fn alloc, void* user_data, int64_t* handle);

/* Grouped allgather and reducescatter (Horovod's grouped_allgather /
 * grouped_reducescatter): `count` tensors negotiated and completed
 * together among the members of `process_set_id` (0: every rank). Member i
 * is names[i], inputs[i] of ndims[i] dimensions shapes[i] and dtype
 * dtypes[i], as chorus_allgather_async / chorus_reducescatter_async take one;
 * `alloc` is called once per member for its output, with user_data[i]
 * (user_data may be NULL: NULL for every member); handles[i] receives its
 * handle. Every member is checked before any is started. A member's bad
 * input (shape, dtype, input, `alloc`; the op) is refused as under "Bad
 * arguments" above: the call returns 0 with every handles[i] set, and every
 * member's handle fails on every rank, naming the refusing rank. A count
 * below 1 or a NULL array or name fails the call at once, with no handle.
 * A member that differs across ranks fails the whole group on every rank.
 * (ABI version 7) */
CHORUS_API int chorus_grouped_allgather_async(int process_set_id, int count, const char* const* names,
                                              const void* const* inputs, const int64_t* const* shapes,
                                              const int* ndims, const chorus_dtype* dtypes, chorus_alloc_fn alloc,
                                              void* const* user_data, int64_t* handles);
CHORUS_API int chorus_grouped_reducescatter_async(int process_set_id, int count, const char* const* names,
                                                  const void* const* inputs, const int64_t* const* shapes,
                                                  const int* ndims, const chorus_dtype* dtypes, chorus_reduce_op op,
                                                  double prescale, double postscale, chorus_alloc_fn alloc,
                                                  void* const* user_data, int64_t* handles);

/* Allreduce of a tensor with its shape (ABI version 13): as
 * chorus_allreduce_async, but the ranks also agree on the shape (`ndim`
 * dimensions `shape`; ndim 0 is a scalar and shape may be NULL), so a
 * (6,) tensor against a (2, 3) one fails on every rank naming both, as
 * Horovod's allreduce does. `device` < 0: host memory; >= 0: device
 * buffers on that CUDA device, written by work on `stream`, as the
 * *_on_device functions take them. */
CHORUS_API int chorus_allreduce_shaped_async(int process_set_id, const char* name, const void* input, void* output,
                                             const int64_t* shape, int ndim, chorus_dtype dtype,
                                             chorus_reduce_op op, double prescale, double postscale, int device,
                                             void* stream, int64_t* handle);

/* Grouped allreduce (Horovod's grouped_allreduce): `count` tensors,
 * inputs[i] of ndims[i] dimensions shapes[i] and dtype dtypes[i] into
 * outputs[i] (the same pointer: in place), negotiated, fused and completed
 * together among the members of `process_set_id` (0: every rank), in host
 * memory; handles[i] receives member i's handle. Bad input (a member's
 * shape, dtype, a NULL buffer; the op) is refused as under "Bad arguments":
 * 0 with every handle set, and every member fails on every rank. A count
 * below 1 or a NULL array or name fails the call at once, with no handle.
 * (ABI version 13) */
CHORUS_API int chorus_grouped_allreduce_async(int process_set_id, int count, const char* const* names,
                                              const void* const* inputs, void* const* outputs,
                                              const int64_t* const* shapes, const int* ndims,
                                              const chorus_dtype* dtypes, chorus_reduce_op op, double prescale,
                                              double postscale, int64_t* handles);

/* The collective kinds, for chorus_refuse_async (ABI version 13). */
typedef enum chorus_collective_e CHORUS_ENUM_BASE {
  CHORUS_COLLECTIVE_ALLREDUCE = 0,
  CHORUS_COLLECTIVE_BROADCAST = 1,
  CHORUS_COLLECTIVE_ALLGATHER = 2,
  CHORUS_COLLECTIVE_REDUCESCATTER = 3,
  CHORUS_COLLECTIVE_ALLTOALL = 4
} chorus_collective;

/* A front end's own refusal of this rank's call (ABI version 13): what a
 * front end finds wrong before it can hand Chorus a buffer (a
 * non-contiguous tensor, a wrong device, a wrong type) takes part in the
 * negotiation of `name` as a `kind` collective in `process_set_id`, so
 * every rank's call of that name fails at its wait with `why` and this rank
 * named, instead of the others waiting for this one. Returns 0 with
 * *handle set (its wait fails with CHORUS_ERR_INVALID_ARGUMENT). The group
 * form refuses a grouped call of `count` members (names[i]; handles[i]). */
CHORUS_API int chorus_refuse_async(int process_set_id, chorus_collective kind, const char* name, const char* why,
                                   int64_t* handle);
CHORUS_API int chorus_refuse_group_async(int process_set_id, chorus_collective kind, int count,
                                         const char* const* names, const char* why, int64_t* handles);

/* This rank is out of data (ABI version 4): blocks until every rank called
 * chorus_join, and returns the rank that joined last (>= 0), or an error
 * code. Meanwhile the other ranks' allreduces go on, this rank taking part
 * with zeros of each tensor's shape (Average divides by every rank). */
CHORUS_API int chorus_join(void);

/* Shared-host memory (ABI version 4): `bytes` bytes (64-byte aligned,
 * uninitialized) from this rank's shared-memory arena, into *out. When every
 * rank on the host allreduces tensors that lie there, the ranks read and
 * write each other's tensors in place, with no staging copies (see
 * chorus::allocate_shared_host in docs/api.md for when it is ordinary
 * memory instead: still correct, only staged). The block stays valid, even
 * after chorus_shutdown, until chorus_free_shared_host(block); freeing a
 * pointer that did not come from here is CHORUS_ERR_INVALID_ARGUMENT, NULL
 * is ignored. Not initialized: CHORUS_ERR_PRECONDITION. */
CHORUS_API int chorus_allocate_shared_host(int64_t bytes, void** out);
CHORUS_API int chorus_free_shared_host(void* block);
/* 1 when `bytes` bytes at `p` lie in this rank's arena, 0 when not, or an
 * error code. (ABI version 4) */
CHORUS_API int chorus_in_shared_host(const void* p, int64_t bytes);

/* Timeline control (ABI version 8; Horovod's start_timeline/stop_timeline):
 * this rank starts writing its Chrome-trace timeline to `path` (rank r > 0:
 * `path.rank<r>`), marking each background cycle when `mark_cycles` != 0;
 * CHORUS_ERR_PRECONDITION when one is already running. Local to the rank.
 * chorus_stop_timeline ends the file as valid JSON and returns 1, or 0 when
 * no timeline was running. See Runtime::start_timeline in docs/api.md. */
CHORUS_API int chorus_start_timeline(const char* path, int mark_cycles);
CHORUS_API int chorus_stop_timeline(void);

/* 1 done successfully, 0 pending, < 0 error code (an unknown handle, or the
 * operation failed: chorus_last_error says why; chorus_wait still releases
 * the handle). */
CHORUS_API int chorus_poll(int64_t handle);
/* Blocks until done; 0 ok, else an error code. Releases the handle. */
CHORUS_API int chorus_wait(int64_t handle);
/* Like chorus_wait, but gives up after `timeout_seconds` (>= 0; 0 only
 * looks): CHORUS_ERR_TIMEOUT when the operation is still pending, and the
 * handle stays valid (the operation goes on; wait or poll again). Any other
 * result releases the handle, as chorus_wait does. A front end that must
 * stay interruptible (Python's Ctrl-C) waits in slices. (ABI version 13) */
CHORUS_API int chorus_wait_timeout(int64_t handle, double timeout_seconds);
/* Blocks until the operation completed, successfully or not, or
 * `timeout_seconds` passed, and keeps the handle either way: 1 completed
 * (read chorus_received_splits, then chorus_wait for the result),
 * CHORUS_ERR_TIMEOUT still pending, or an error code for an unknown handle
 * or a negative timeout. (ABI version 13) */
CHORUS_API int chorus_wait_completed(int64_t handle, double timeout_seconds);
/* Calls fn(user_data, handle) once when the operation completes,
 * successfully or not: on Chorus's background thread, or at once on this
 * thread when it already has. The handle stays valid: fn (or anyone later)
 * calls chorus_wait(handle), which then returns at once with the result
 * and releases it. fn must be short and must not wait for another
 * operation: it holds up the completions after it. For a framework whose
 * own ops complete asynchronously (a TensorFlow AsyncOpKernel). (ABI 16) */
typedef void (*chorus_done_fn)(void* user_data, int64_t handle);
CHORUS_API int chorus_on_complete(int64_t handle, chorus_done_fn fn, void* user_data);
/* Message of this thread's last error ("" if none). Valid until this thread's
 * next chorus_* call. */
CHORUS_API const char* chorus_last_error(void);
/* CHORUS_ABI_VERSION of the library actually loaded. */
CHORUS_API int chorus_abi_version(void);

#ifdef __cplusplus
}
#endif

#endif /* CHORUS_C_API_H_ */
