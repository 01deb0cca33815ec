#pragma once
// --device cuda: what the device sections (device_sweep.cc, device_storm.cc)
// share with their driver (device_main.cc). CUDA-free: device memory and the
// raw NCCL reference are CudaRig's. No MPI: ranks line up and compare times
// through Chorus's own host collectives.

#include <memory>
#include <string>
#include <vector>

#include "bench_util.h"
#include "cuda_rig.h"

namespace bench {

struct DeviceRun {
  const Settings& settings;
  CudaRig& rig;
  int rank = 0;
  int size = 1;
  /// Raw NCCL runs beside Chorus (not when ranks share a GPU: NCCL refuses
  /// two ranks of one communicator on one device).
  bool reference = false;

  // What the targets are computed from (rank 0's view; 0 when not measured).
  double worst_sweep_ratio = 0;  ///< max over sizes >= 1 MiB of chorus / nccl time
  int64_t worst_sweep_bytes = 0;
  double storm_ratio = 0;        ///< chorus storm (one allreduce_async each) / one packed ncclAllReduce
  double storm_grouped_ratio = 0;  ///< the same through one grouped_allreduce_async
  double latency_over_us = 0;    ///< chorus 4 KiB median - nccl median
  bool latency_measured = false;
  int64_t wrong = 0;             ///< every #wrong of the run, summed over ranks
};

/// A float32 tensor of `n` elements at `data` on the rig's device, written
/// on the rig's stream.
std::shared_ptr<chorus::Tensor> device_view(const CudaRig& rig, float* data, int64_t n);

/// Lines the ranks up (a Chorus barrier; nothing at one rank).
void line_up(int size);
/// The slowest rank's time (a Chorus max-allreduce; itself at one rank).
double slowest(double seconds, int size);
/// The sum over ranks of `v`.
int64_t sum_over_ranks(int64_t v);

/// Lines the ranks up, then one raw ncclAllReduce (sum) on the rig's stream,
/// waited for: this rank's seconds.
double timed_raw_allreduce(DeviceRun& run, const float* in, float* out, int64_t n);

void device_sweep(DeviceRun& run);
void device_storm(DeviceRun& run);
void device_latency(DeviceRun& run);

}  // namespace bench
