#pragma once
// The staged device path (CHORUS_GPU_OPERATIONS=staged, or auto without
// NCCL): each CUDA response is copied to pinned host memory after its
// inputs' ready points, run through the CPU data plane, and copied back;
// its handles complete only once the copy back has finished on the device.
// Every collective the CPU side has runs this way, and it is the only way
// several ranks share one GPU (NCCL refuses two ranks of a communicator on
// one device).
//
// Nothing here blocks the background thread on the device: it only queues
// the copies in (stage_in) and hands the job to the staged worker thread.
// The worker owns a backend split from the engine's (made when the first
// CUDA response runs, at the same place of the response order on every
// rank, like a process set's), so its host collectives run in the order of
// the responses on every rank, on their own communicator, while the
// background thread goes on negotiating and running CPU responses. The
// worker waits for the copies (polling their marks, up to
// CHORUS_GPU_OP_TIMEOUT_SECONDS), runs the host collective, queues the copies
// back, waits for them, and completes the entries.
//
// Before each host collective the ranks agree (one small allgather of a
// flag) that every rank's copies in succeeded; when one failed or timed out,
// no rank runs the collective (no stale bytes reach anyone), every rank
// fails the job's tensors, and the failed rank's fault() shuts the job down
// on every rank (engine/background_loop.h).

#include <memory>

#include "engine/device_support.h"

namespace chorus::detail {

/// Splits the staged worker's backend from `context.backend` (a collective:
/// call it on every rank at the same place of the response order) and
/// starts the worker.
StatusOr<std::unique_ptr<DeviceOperations>> make_staged_device_operations(const DeviceOperationsContext& context);

}  // namespace chorus::detail
