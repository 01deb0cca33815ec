// The staged device path across processes: CUDA tensors (in fake device
// memory, test/unit/fake_device_memory.h) through a runtime over the real
// transport (MPI under mpirun, TCP under test/tcp/run_tcp_job.sh), whose
// staged worker runs its host collectives on a backend split from the
// engine's while the background thread keeps running CPU collectives.
// Mixes CPU and CUDA tensors on purpose, with each rank's timeline on (the
// staged spans of every device tensor, recorded by the worker thread). Exits
// non-zero naming the first failed check.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

#include "chorus/runtime.h"
#include "comm/backend_choice.h"
#include "fake_device_memory.h"
#include "api/runtime_access.h"
#include "device/staged_device_operations.h"

using namespace chorus;
using chorus::test::FakeDeviceContext;
using chorus::test::FakeDeviceMemory;
using chorus::test::FakeDeviceTensor;

namespace {

int g_rank = -1;

#define CHECK(cond)                                                                      \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      std::fprintf(stderr, "[rank %d] %s:%d: check failed: %s\n", g_rank, __FILE__, __LINE__, #cond); \
      std::exit(1);                                                                      \
    }                                                                                    \
  } while (0)

std::shared_ptr<FakeDeviceTensor> device_floats(const std::vector<float>& values, int device) {
  auto t = std::make_shared<FakeDeviceTensor>(DataType::kFloat32, TensorShape{int64_t(values.size())}, device);
  for (size_t i = 0; i < values.size(); ++i) t->as<float>()[i] = values[i];
  return t;
}

// Several steps of a training loop: CUDA gradients (fused), a CPU tensor
// between them, an allgather of a varying first dimension.
void train(Runtime& rt, int rank, int size) {
  AllreduceOptions sum;
  sum.op = ReduceOp::kSum;
  OpHooks on_gpu;
  on_gpu.context = std::make_shared<FakeDeviceContext>(rank);
  for (int step = 0; step < 20; ++step) {
    std::vector<Handle> handles;
    std::vector<std::shared_ptr<FakeDeviceTensor>> grads;
    for (int k = 0; k < 5; ++k) {
      grads.push_back(device_floats(std::vector<float>(size_t(100 * (k + 1)), float(rank + k + step)), rank));
      handles.push_back(rt.allreduce_async("grad." + std::to_string(k), grads.back(), grads.back(), sum));
    }
    std::vector<float> host(64, float(rank));
    auto cpu = std::make_shared<HostTensorView>(host.data(), DataType::kFloat32, TensorShape{64});
    handles.push_back(rt.allreduce_async("cpu.loss", cpu, cpu, sum));
    auto rows = std::make_shared<FakeDeviceTensor>(DataType::kInt32, TensorShape{rank + 1}, rank);
    for (int i = 0; i <= rank; ++i) rows->as<int32_t>()[i] = rank;
    Handle gathered = rt.allgather_async("rows", rows, on_gpu);
    for (Handle& h : handles) h.wait();
    gathered.wait();
    const float ranks_sum = float(size * (size - 1)) / 2;
    for (int k = 0; k < 5; ++k) {
      CHECK(grads[size_t(k)]->as<float>()[0] == ranks_sum + float(size * (k + step)));
      CHECK(grads[size_t(k)]->as<float>()[100 * (k + 1) - 1] == ranks_sum + float(size * (k + step)));
    }
    CHECK(host[63] == ranks_sum);
    auto all = std::static_pointer_cast<FakeDeviceTensor>(gathered.output());
    CHECK(all->shape() == TensorShape{int64_t(size * (size + 1) / 2)});
    int at = 0;
    for (int r = 0; r < size; ++r) {
      for (int i = 0; i <= r; ++i) CHECK(all->as<int32_t>()[at++] == r);
    }
  }
}

// How many complete events labelled `label` this rank's trace holds.
size_t spans_named(const std::string& trace, const std::string& label) {
  const std::string key = "{\"name\":\"" + label + "\",\"ph\":\"X\"";
  size_t n = 0;
  for (size_t at = trace.find(key); at != std::string::npos; at = trace.find(key, at + 1)) ++n;
  return n;
}

// Every device tensor of train(): 100 allreduces, 20 allgathers; the CPU
// tensor gets none of these spans.
void check_timeline(const std::string& path, int rank) {
  const std::string file = rank == 0 ? path : path + ".rank" + std::to_string(rank);
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  const std::string trace = text.str();
  std::remove(file.c_str());
  CHECK(spans_named(trace, "QUEUE") == 120);
  CHECK(spans_named(trace, "MEMCPY_IN_HOST_BUFFER") == 120);
  CHECK(spans_named(trace, "HOST_ALLREDUCE") == 100);
  CHECK(spans_named(trace, "HOST_ALLGATHER") == 20);
  CHECK(spans_named(trace, "MEMCPY_OUT_HOST_BUFFER") == 120);
  CHECK(spans_named(trace, "NEGOTIATE_ALLREDUCE") == 120);  // the CPU tensor's too
}

}  // namespace

int main() {
  RuntimeOptions options = RuntimeOptions::from_environment();
  options.gpu_operations = GpuOperations::kStaged;
  auto memory = std::make_shared<FakeDeviceMemory>();
  auto support = std::make_shared<detail::DeviceSupport>();
  support->memory = memory;
  support->make_staged = detail::make_staged_device_operations;
  std::unique_ptr<Runtime> rt = detail::RuntimeAccess::make(detail::make_backend(options), options, support);
  g_rank = rt->rank();
  // Named after rank 0's process, so jobs run side by side (MPI, TCP) do not share files.
  int32_t job_id = int32_t(getpid());
  rt->broadcast_async("timeline.job_id",
                      std::make_shared<HostTensorView>(&job_id, DataType::kInt32, TensorShape{1}), 0).wait();
  const std::string timeline = "chorus_staged_over_mpi." + std::to_string(job_id) + ".json";
  rt->start_timeline(timeline);
  train(*rt, rt->rank(), rt->size());
  CHECK(rt->stop_timeline());
  check_timeline(timeline, rt->rank());
  const detail::InternalStats st = detail::RuntimeAccess::stats(*rt);
  CHECK(st.staged_device_ops >= 20);
  CHECK(st.staging_allocations <= 8);  // reused across the steps
  // Hosts of equal rank counts (test/tcp plays them): the host allreduces went hierarchical.
  const bool hierarchical = options.hierarchical_allreduce && rt->local_size() > 1 && rt->local_size() < rt->size();
  CHECK((st.hierarchical_allreduce_ops > 0) == hierarchical);
  rt->shutdown();
  if (g_rank == 0) std::printf("staged over %s: all checks passed\n", options.transport == Transport::kTcp ? "tcp" : "the job's transport");
  return 0;
}
