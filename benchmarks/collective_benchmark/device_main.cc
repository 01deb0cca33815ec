// --device cuda: the run without MPI (one process with no launcher, or
// ranks started by chorusrun --tcp / by hand with torchrun's variables).
// Sets up the rig and the raw NCCL reference, runs the sections, and prints
// issue #18's targets with PASS/MISS computed from this run.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "device_bench.h"

namespace bench {

std::shared_ptr<chorus::Tensor> device_view(const CudaRig& rig, float* data, int64_t n) {
  return std::make_shared<chorus::DeviceTensorView>(data, chorus::DataType::kFloat32, chorus::TensorShape{n},
                                                    rig.device(), rig.stream());
}

void line_up(int size) {
  if (size > 1) chorus::barrier();
}

double timed_raw_allreduce(DeviceRun& run, const float* in, float* out, int64_t n) {
  line_up(run.size);
  const double t0 = now_seconds();
  run.rig.raw_allreduce(in, out, n);
  run.rig.synchronize();
  return now_seconds() - t0;
}

namespace {

template <class T>
T host_allreduce(const char* name, T value, chorus::DataType dtype, chorus::ReduceOp op) {
  auto view = std::make_shared<chorus::HostTensorView>(&value, dtype, chorus::TensorShape{1});
  chorus::AllreduceOptions o;
  o.op = op;
  chorus::allreduce_async(name, view, view, o).wait();
  return value;
}

}  // namespace

double slowest(double seconds, int size) {
  if (size == 1) return seconds;
  return host_allreduce("bench.slowest", seconds, chorus::DataType::kFloat64, chorus::ReduceOp::kMax);
}

int64_t sum_over_ranks(int64_t v) {
  return host_allreduce("bench.sum", v, chorus::DataType::kInt64, chorus::ReduceOp::kSum);
}

namespace {

/// Raw NCCL only when every rank has a GPU of its own (agreed by all ranks);
/// rank 0's ncclUniqueId reaches the others through a Chorus broadcast.
void open_reference(DeviceRun& run, int local_size) {
  const int own_gpu = cuda_device_count() >= local_size ? 1 : 0;
  run.reference = host_allreduce("bench.own_gpu", own_gpu, chorus::DataType::kInt32, chorus::ReduceOp::kMin) == 1;
  if (!run.reference) return;
  std::vector<uint8_t> id = run.rank == 0 ? CudaRig::new_nccl_id() : std::vector<uint8_t>(kNcclIdBytes);
  auto view = std::make_shared<chorus::HostTensorView>(id.data(), chorus::DataType::kUInt8,
                                                       chorus::TensorShape{kNcclIdBytes});
  chorus::broadcast_async("bench.nccl_id", view, 0).wait();
  run.rig.open_nccl(id, run.rank, run.size);
}

const char* verdict(bool pass) { return pass ? "PASS" : "MISS"; }

void print_targets(const DeviceRun& run) {
  std::printf("\n# issue #18 targets, from this run (%d rank%s)\n", run.size, run.size > 1 ? "s" : "");
  if (!run.reference) {
    std::printf("n/a: no raw NCCL reference (ranks share a GPU; NCCL refuses two ranks of one communicator on one"
                " device)\n");
    return;
  }
  const Settings& s = run.settings;
  if (s.wants("sweep") && run.worst_sweep_bytes > 0) {
    std::printf("%-58s worst %.3fx at %lld bytes  %s\n", "sweep >= 1 MiB: chorus time within 5% of ncclAllReduce",
                run.worst_sweep_ratio, (long long)run.worst_sweep_bytes, verdict(run.worst_sweep_ratio <= 1.05));
  }
  if (s.wants("storm")) {
    std::printf("%-58s %.3fx  %s\n", "storm, allreduce_async each: <= 1.25x one packed ncclAllReduce",
                run.storm_ratio, verdict(run.storm_ratio <= 1.25));
    std::printf("%-58s %.3fx  %s\n", "storm, one grouped_allreduce_async: <= 1.25x the same",
                run.storm_grouped_ratio, verdict(run.storm_grouped_ratio <= 1.25));
  }
  if (s.wants("latency") && run.latency_measured) {
    std::printf("%-58s %+.1f us  %s\n", "latency 4 KiB: chorus <= 30 us over ncclAllReduce", run.latency_over_us,
                verdict(run.latency_over_us <= 30.0));
  }
}

int run_sections(const Settings& s) {
  CudaRig rig(chorus::local_rank() % cuda_device_count());
  DeviceRun run{s, rig};
  run.rank = chorus::rank();
  run.size = chorus::size();
  open_reference(run, chorus::local_size());
  if (run.rank == 0) {
    const char* ops = std::getenv("CHORUS_GPU_OPERATIONS");
    std::printf("# Chorus %s collective benchmark on CUDA, %d ranks (rank 0 on GPU %d), CHORUS_GPU_OPERATIONS=%s\n",
                chorus::version(), run.size, rig.device(), ops ? ops : "(unset: auto)");
  }
  if (s.wants("sweep")) device_sweep(run);
  if (s.wants("storm")) device_storm(run);
  if (s.wants("latency")) device_latency(run);
  if (run.rank == 0) {
    print_targets(run);
    std::printf("# #wrong over the whole run: %lld\n", (long long)run.wrong);
  }
  return run.wrong == 0 ? 0 : 1;
}

}  // namespace

int run_device_benchmark(const Settings& s) {
  std::string why;
  if (cuda_device_count(&why) == 0) {
    std::printf("collective_benchmark: --device cuda: no CUDA device found (%s): exit 77, skipped\n", why.c_str());
    return 77;
  }
  try {
    chorus::init();
    const int status = run_sections(s);
    chorus::shutdown();
    return status;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "collective_benchmark: error (rank %d): %s\n", chorus::is_initialized() ? chorus::rank() : -1,
                 e.what());
    chorus::shutdown();
    return 1;
  }
}

}  // namespace bench
