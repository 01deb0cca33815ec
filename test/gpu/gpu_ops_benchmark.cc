// The NCCL device data plane (NcclDeviceOperations: plan, ready wait, launch,
// done event, completion thread) against raw ncclAllReduce on the same
// buffers in the same run, at one rank, in nccl-tests columns. It measures
// what the device data plane adds; negotiation (the runtime's background
// loop) is not in it. Exit 77 without a GPU. Run by scripts/gpu_check.sh.
//
//   chorus_gpu_ops_benchmark [iterations]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "comm/loopback/loopback_backend.h"
#include "device/cuda/nccl_device_operations.h"
#include "engine/handle_state.h"

using namespace chorus;
using namespace chorus::detail;
using Clock = std::chrono::steady_clock;

namespace {

#define CHECK_CUDA(x) do { cudaError_t r_ = (x); if (r_ != cudaSuccess) { std::fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(r_)); std::exit(1); } } while (0)
#define CHECK_NCCL(x) do { ncclResult_t r_ = (x); if (r_ != ncclSuccess) { std::fprintf(stderr, "%s: %s\n", #x, ncclGetErrorString(r_)); std::exit(1); } } while (0)

/// A float32 tensor over device memory the benchmark owns.
class View final : public Tensor {
 public:
  View(void* data, int64_t count) : data_(data), count_(count) {}
  DataType dtype() const override { return DataType::kFloat32; }
  TensorShape shape() const override { return TensorShape{count_}; }
  const void* data() const override { return data_; }
  void* mutable_data() override { return data_; }
  int64_t size_bytes() const override { return count_ * 4; }
  int device() const override { return 0; }

 private:
  void* data_;
  int64_t count_;
};

struct Buffers {
  explicit Buffers(int64_t count) : count(count) {
    CHECK_CUDA(cudaMalloc(&in, size_t(count) * 4));
    CHECK_CUDA(cudaMalloc(&out, size_t(count) * 4));
    std::vector<float> ones(static_cast<size_t>(count), 1.0f);
    CHECK_CUDA(cudaMemcpy(in, ones.data(), ones.size() * 4, cudaMemcpyHostToDevice));
  }
  ~Buffers() {
    cudaFree(in);
    cudaFree(out);
  }
  /// Elements of the output that are not the one-rank sum (1.0).
  int64_t wrong() const {
    std::vector<float> host(static_cast<size_t>(count));
    CHECK_CUDA(cudaMemcpy(host.data(), out, host.size() * 4, cudaMemcpyDeviceToHost));
    return std::count_if(host.begin(), host.end(), [](float v) { return v != 1.0f; });
  }
  int64_t count;
  void* in = nullptr;
  void* out = nullptr;
};

/// Seconds per iteration: in total, and of it on the host inside execute()
/// (plan, ready waits, launches, the done event, the hand-over).
struct Timing {
  double total = 0;
  double launch = 0;
};

/// `iterations` allreduces of every (in, out) pair through the operations,
/// each one response, launched back to back (the entries are built before
/// the clock starts: they are the runtime's work, not the data plane's).
Timing chorus_time(DeviceOperations& ops, const std::vector<Buffers*>& tensors, int iterations) {
  std::vector<std::shared_ptr<HandleState>> handles;
  std::vector<std::vector<TensorEntry>> batches(static_cast<size_t>(iterations));
  Response r;
  r.type = ResponseType::kAllreduce;
  for (size_t t = 0; t < tensors.size(); ++t) r.names.push_back("t" + std::to_string(t));
  for (auto& entries : batches) {
    for (size_t t = 0; t < tensors.size(); ++t) {
      TensorEntry e;
      e.request.name = r.names[t];
      e.request.shape = {tensors[t]->count};
      e.request.device = 0;
      e.input = std::make_shared<View>(tensors[t]->in, tensors[t]->count);
      e.output = std::make_shared<View>(tensors[t]->out, tensors[t]->count);
      e.handle = std::make_shared<HandleState>();
      handles.push_back(e.handle);
      entries.push_back(std::move(e));
    }
  }
  Timing timing;
  const auto start = Clock::now();
  for (auto& entries : batches) {
    const auto launch_start = Clock::now();
    ops.execute(r, std::move(entries));
    timing.launch += std::chrono::duration<double>(Clock::now() - launch_start).count();
  }
  for (auto& h : handles)
    if (!h->wait(std::nullopt).is_ok()) {
      std::fprintf(stderr, "allreduce failed: %s\n", h->status().message().c_str());
      std::exit(1);
    }
  timing.total = std::chrono::duration<double>(Clock::now() - start).count() / iterations;
  timing.launch /= iterations;
  return timing;
}

/// Host microseconds per call of `call`, over `n` calls.
template <class Call>
double per_call_us(int n, Call&& call) {
  const auto start = Clock::now();
  for (int i = 0; i < n; ++i) call(i);
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count() / n;
}

/// What the CUDA and NCCL calls the data plane makes cost on this machine's
/// host: the floor under the per-tensor and per-operation numbers.
void print_call_costs(ncclComm_t comm, cudaStream_t stream, void* small) {
  constexpr int kN = 2000;
  std::vector<cudaEvent_t> events(kN);
  std::printf("# host cost of one call, mean of %d\n", kN);
  std::printf("cudaEventCreate+Destroy %6.2f us\n", per_call_us(kN, [&](int) {
    cudaEvent_t e;
    CHECK_CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    CHECK_CUDA(cudaEventDestroy(e));
  }));
  for (auto& e : events) CHECK_CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  std::printf("cudaEventRecord         %6.2f us\n", per_call_us(kN, [&](int i) { CHECK_CUDA(cudaEventRecord(events[i], stream)); }));
  std::printf("cudaStreamWaitEvent     %6.2f us\n", per_call_us(kN, [&](int i) { CHECK_CUDA(cudaStreamWaitEvent(stream, events[i], 0)); }));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  std::printf("cudaEventQuery (done)   %6.2f us\n", per_call_us(kN, [&](int i) { CHECK_CUDA(cudaEventQuery(events[i])); }));
  int device = 0;
  std::printf("cudaGetDevice           %6.2f us\n", per_call_us(kN, [&](int) { CHECK_CUDA(cudaGetDevice(&device)); }));
  std::printf("cudaSetDevice (same)    %6.2f us\n", per_call_us(kN, [&](int) { CHECK_CUDA(cudaSetDevice(device)); }));
  std::printf("cudaMemsetAsync 4 B     %6.2f us\n", per_call_us(kN, [&](int) { CHECK_CUDA(cudaMemsetAsync(small, 0, 4, stream)); }));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  std::printf("ncclAllReduce 4 KiB     %6.2f us (the call only)\n", per_call_us(200, [&](int) {
    CHECK_NCCL(ncclAllReduce(small, small, 1024, ncclFloat32, ncclSum, comm, stream));
  }));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  for (auto& e : events) CHECK_CUDA(cudaEventDestroy(e));
}

double raw_time(ncclComm_t comm, cudaStream_t stream, void* in, void* out, int64_t count, int iterations) {
  const auto start = Clock::now();
  for (int i = 0; i < iterations; ++i)
    CHECK_NCCL(ncclAllReduce(in, out, size_t(count), ncclFloat32, ncclSum, comm, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  return std::chrono::duration<double>(Clock::now() - start).count() / iterations;
}

int64_t g_wrong = 0;  // over the whole run: any makes the exit status 1

/// `launch`: host seconds inside execute() (chorus), or < 0 (none).
/// Like raw_time, on a non-blocking communicator (the data plane's kind):
/// a call that returns ncclInProgress is polled to the end before the next.
/// `*launch`: host seconds per call, polls included.
double raw_nonblocking_time(ncclComm_t comm, cudaStream_t stream, void* in, void* out, int64_t count, int iterations,
                            double* launch) {
  const auto start = Clock::now();
  for (int i = 0; i < iterations; ++i) {
    ncclResult_t r = ncclAllReduce(in, out, size_t(count), ncclFloat32, ncclSum, comm, stream);
    while (r == ncclInProgress) {
      ncclResult_t state = ncclSuccess;
      CHECK_NCCL(ncclCommGetAsyncError(comm, &state));
      r = state;
    }
    CHECK_NCCL(r);
  }
  *launch = std::chrono::duration<double>(Clock::now() - start).count() / iterations;
  CHECK_CUDA(cudaStreamSynchronize(stream));
  return std::chrono::duration<double>(Clock::now() - start).count() / iterations;
}

ncclComm_t nonblocking_comm() {
  ncclUniqueId id;
  CHECK_NCCL(ncclGetUniqueId(&id));
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t comm;
  ncclResult_t r = ncclCommInitRankConfig(&comm, 1, id, 0, &config);
  while (r == ncclInProgress) {
    ncclResult_t state = ncclSuccess;
    CHECK_NCCL(ncclCommGetAsyncError(comm, &state));
    r = state;
  }
  CHECK_NCCL(r);
  return comm;
}

void row(const char* who, int64_t bytes, double seconds, double launch, int64_t wrong) {
  const double algbw = double(bytes) / seconds / 1e9;
  g_wrong += wrong;
  std::printf("%-8s %12lld %10.1f %8.2f %8.2f %7lld", who, static_cast<long long>(bytes), seconds * 1e6, algbw,
              0.0 /* busbw = algbw x 2(n-1)/n, 0 at one rank */, static_cast<long long>(wrong));
  if (launch >= 0) std::printf(" %10.1f", launch * 1e6);
  std::printf("\n");
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no CUDA device: skipping\n");
    return 77;
  }
  const int iterations = argc > 1 ? std::atoi(argv[1]) : 20;
  auto backend = make_loopback_backend(make_loopback_world(1), 0);
  if (!backend->start().is_ok()) return 1;
  auto ops = gpu::make_nccl_device_operations(*backend, {}, gpu::make_gpu_devices());
  ncclComm_t raw;
  int device = 0;
  CHECK_NCCL(ncclCommInitAll(&raw, 1, &device));
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  ncclComm_t nb = nonblocking_comm();  // "nccl-nb" rows: raw NCCL on the data plane's kind of communicator

  std::printf("# one rank, float32 sum, out of place, %d iterations launched back to back; time in us per "
              "allreduce; launch(us): host time inside execute() (chorus), in the calls and their polls (nccl-nb: a non-blocking communicator, as the data plane uses)\n", iterations);
  std::printf("%-8s %12s %10s %8s %8s %7s %10s\n", "who", "size(B)", "time(us)", "algbw", "busbw", "#wrong", "launch(us)");
  for (int64_t mib : {1, 4, 16, 64, 256}) {
    Buffers b(mib << 18);
    chorus_time(*ops, {&b}, 3);  // warm-up (the first one makes the communicator)
    raw_time(raw, stream, b.in, b.out, b.count, 3);
    CHECK_CUDA(cudaMemset(b.out, 0, size_t(b.count) * 4));  // each row checks its own result
    const Timing c = chorus_time(*ops, {&b}, iterations);
    row("chorus", b.count * 4, c.total, c.launch, b.wrong());
    CHECK_CUDA(cudaMemset(b.out, 0, size_t(b.count) * 4));
    const double n = raw_time(raw, stream, b.in, b.out, b.count, iterations);
    row("nccl", b.count * 4, n, -1, b.wrong());
    CHECK_CUDA(cudaMemset(b.out, 0, size_t(b.count) * 4));
    double nb_launch = 0;
    raw_nonblocking_time(nb, stream, b.in, b.out, b.count, 3, &nb_launch);
    const double nbt = raw_nonblocking_time(nb, stream, b.in, b.out, b.count, iterations, &nb_launch);
    row("nccl-nb", b.count * 4, nbt, nb_launch, b.wrong());
  }

  std::vector<std::unique_ptr<Buffers>> storm;
  std::vector<Buffers*> views;
  for (int t = 0; t < 200; ++t) {
    storm.push_back(std::make_unique<Buffers>(4096));
    views.push_back(storm.back().get());
  }
  Buffers packed(200 * 4096);
  chorus_time(*ops, views, 3);
  for (auto* v : views) CHECK_CUDA(cudaMemset(v->out, 0, size_t(v->count) * 4));
  const Timing storm_chorus = chorus_time(*ops, views, iterations);
  int64_t storm_wrong = 0;
  for (auto* v : views) storm_wrong += v->wrong();
  g_wrong += storm_wrong;
  raw_time(raw, stream, packed.in, packed.out, packed.count, 3);
  const double storm_raw = raw_time(raw, stream, packed.in, packed.out, packed.count, iterations);
  std::printf("storm: 200 x 16 KiB in one response: chorus %.1f us (launch %.1f us, #wrong %lld), one raw "
              "ncclAllReduce of the same bytes %.1f us: ratio %.2f\n", storm_chorus.total * 1e6,
              storm_chorus.launch * 1e6, static_cast<long long>(storm_wrong), storm_raw * 1e6,
              storm_chorus.total / storm_raw);

  Buffers small(1024);
  std::vector<double> chorus_lat, raw_lat;
  std::vector<double> launch_lat;
  for (int i = 0; i < 200; ++i) {
    const Timing t = chorus_time(*ops, {&small}, 1);
    chorus_lat.push_back(t.total);
    launch_lat.push_back(t.launch);
    raw_lat.push_back(raw_time(raw, stream, small.in, small.out, small.count, 1));
  }
  std::printf("latency: one 4 KiB allreduce, launch to completion seen by the host, median of 200: chorus %.1f us "
              "(launch %.1f us), raw ncclAllReduce + cudaStreamSynchronize %.1f us: %.1f us over\n",
              median(chorus_lat) * 1e6, median(launch_lat) * 1e6, median(raw_lat) * 1e6,
              (median(chorus_lat) - median(raw_lat)) * 1e6);
  print_call_costs(raw, stream, small.in);
  ops.reset();
  ncclCommDestroy(raw);
  ncclCommDestroy(nb);
  cudaStreamDestroy(stream);
  backend->stop();
  if (g_wrong != 0) std::printf("#wrong over the run: %lld: FAILED\n", static_cast<long long>(g_wrong));
  return g_wrong == 0 ? 0 : 1;
}
