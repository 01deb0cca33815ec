// On a GPU: NcclDeviceOperations end to end at one rank (the loopback backend
// carries the NCCL unique id): every collective, fused and grouped, scaling
// in every dtype bit for bit against the CPU path's scale_copy, in and out of
// place, a slow producer stream, and an operation past its timeout -> fault -> abort.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "comm/loopback/loopback_backend.h"
#include "device_buffer.h"
#include "device_values.h"
#include "device/cuda/nccl_device_operations.h"
#include "device/cuda/nccl_plan.h"
#include "kernels/reduce_kernels.h"
#include "engine/handle_state.h"

using namespace chorus;
using namespace chorus::detail;
using chorus::test::DeviceBuffer;

namespace {

class DeviceTensor final : public Tensor {
 public:
  DeviceTensor(DataType dtype, TensorShape shape)
      : dtype_(dtype), shape_(std::move(shape)),
        buffer_(std::make_shared<DeviceBuffer>(size_t(shape_.num_elements() * dtype_size(dtype)))) {}
  DataType dtype() const override { return dtype_; }
  TensorShape shape() const override { return shape_; }
  const void* data() const override { return buffer_->data(); }
  void* mutable_data() override { return buffer_->data(); }
  int64_t size_bytes() const override { return shape_.num_elements() * dtype_size(dtype_); }
  int device() const override { return 0; }
  std::vector<char> download() const { return buffer_->download(); }
  void upload(const std::vector<char>& bytes) const { buffer_->upload(bytes); }

 private:
  DataType dtype_;
  TensorShape shape_;
  std::shared_ptr<DeviceBuffer> buffer_;
};

class DeviceContext final : public OpContext {
 public:
  Status allocate_output(const TensorShape& shape, DataType dtype, std::shared_ptr<Tensor>* out) override {
    *out = std::make_shared<DeviceTensor>(dtype, shape);
    return Status::ok();
  }
  Status allocate_zeros(const TensorShape& shape, DataType dtype, std::shared_ptr<Tensor>* out) override {
    return allocate_output(shape, dtype, out);
  }
};

/// One rank, its backend started, and the NCCL operations over it.
struct OneRank {
  explicit OneRank(gpu::NcclOperationsSettings settings = {}) {
    backend = make_loopback_backend(make_loopback_world(1), 0);
    REQUIRE(backend->start().is_ok());
    ops = gpu::make_nccl_device_operations(*backend, std::move(settings), gpu::make_gpu_devices());
  }
  ~OneRank() {
    ops.reset();
    backend->stop();
  }
  std::unique_ptr<Backend> backend;
  std::unique_ptr<DeviceOperations> ops;
};

TensorEntry entry(CollectiveType type, const std::string& name, std::shared_ptr<DeviceTensor> in,
                  std::shared_ptr<Tensor> out) {
  TensorEntry e;
  e.request.type = type;
  e.request.name = name;
  e.request.dtype = in->dtype();
  e.request.shape = in->shape().dim_sizes();
  e.request.device = 0;
  e.input = std::move(in);
  e.output = std::move(out);
  e.hooks.context = std::make_shared<DeviceContext>();
  e.handle = std::make_shared<HandleState>();
  return e;
}

std::shared_ptr<DeviceTensor> filled(DataType dtype, TensorShape shape, std::mt19937_64& rng, std::vector<char>* host) {
  auto t = std::make_shared<DeviceTensor>(dtype, std::move(shape));
  *host = chorus::test::random_elements(dtype, t->shape().num_elements(), rng);
  t->upload(*host);
  return t;
}

Response response_for(ResponseType type, const std::vector<TensorEntry>& entries) {
  Response r;
  r.type = type;
  for (const auto& e : entries) r.names.push_back(e.name());
  return r;
}

Status run(DeviceOperations& ops, const Response& r, std::vector<TensorEntry> entries) {
  std::vector<std::shared_ptr<HandleState>> handles;
  for (const auto& e : entries) handles.push_back(e.handle);
  ops.execute(r, std::move(entries));
  for (auto& h : handles) {
    Status s = h->wait(std::chrono::milliseconds(20000));
    if (!s.is_ok()) return s;
  }
  return Status::ok();
}

/// What one rank's allreduce computes on the CPU path.
std::vector<char> expected_allreduce(const std::vector<char>& in, DataType dtype, double pre, double post) {
  const int64_t n = int64_t(in.size()) / dtype_size(dtype);
  std::vector<char> a(in.size() + 1), b(in.size() + 1);
  scale_copy(a.data(), in.data(), n, dtype, pre, 1);
  scale_copy(b.data(), a.data(), n, dtype, post, 1);
  b.resize(in.size());
  return b;
}

const DataType kTypes[] = {DataType::kUInt8, DataType::kInt8, DataType::kInt32, DataType::kInt64,
                           DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32, DataType::kFloat64};

}  // namespace

// At one rank every reduction is the identity (Average is Sum, Min is Max):
// this checks each dtype/op reaches NCCL and the scaling, not the reduction,
// which test_nccl_plan.cc and the multi-rank runs cover.
TEST_CASE("Allreduce at one rank: every dtype and op, scaled, in and out of place", "[device][nccl_ops]") {
  OneRank rank;
  std::mt19937_64 rng(5);
  int i = 0;
  for (DataType dtype : kTypes) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAverage, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct}) {
      for (bool in_place : {false, true}) {
        std::vector<char> host;
        auto in = filled(dtype, {1001}, rng, &host);
        auto out = in_place ? in : std::make_shared<DeviceTensor>(dtype, TensorShape{1001});
        TensorEntry e = entry(CollectiveType::kAllreduce, "t" + std::to_string(i++), in, out);
        e.request.op = op;
        e.request.prescale = 0.5;
        e.request.postscale = 3.0;
        INFO(dtype_name(dtype) << " " << reduce_op_name(op) << (in_place ? " in place" : " out of place"));
        REQUIRE(run(*rank.ops, response_for(ResponseType::kAllreduce, {e}), {e}).is_ok());
        CHECK(out->download() == expected_allreduce(host, dtype, 0.5, 3.0));
      }
    }
  }
  CHECK(rank.ops->fault().is_ok());
}

TEST_CASE("Fused (packed) and grouped (no copy) allreduces", "[device][nccl_ops]") {
  std::atomic<int64_t> finished_tensors{0};
  gpu::NcclOperationsSettings settings;
  settings.on_finish = [&](ResponseType type, size_t tensors, int64_t, const Status& s) {
    if (type == ResponseType::kAllreduce && s.is_ok()) finished_tensors += int64_t(tensors);
  };
  // The timeline's hook: asked at the launch, what it returns runs before on_finish.
  std::atomic<int64_t> traced_tensors{0}, traced_before_finish{0};
  settings.trace = [&](ResponseType type, const std::vector<TensorEntry>& entries,
                       std::chrono::steady_clock::time_point launched) -> std::function<void(const Status&)> {
    if (type != ResponseType::kAllreduce || launched > std::chrono::steady_clock::now()) return {};
    const auto n = int64_t(entries.size());
    return [&, n, before = finished_tensors.load()](const Status& s) {
      traced_tensors += s.is_ok() ? n : 0;
      traced_before_finish += finished_tensors.load() == before ? 1 : 0;
    };
  };
  OneRank rank(settings);
  std::mt19937_64 rng(6);
  for (int64_t size : {int64_t{37}, gpu::kNoCopyMinBytes / 4 + 3}) {  // packed, then grouped
    std::vector<TensorEntry> entries;
    std::vector<std::vector<char>> hosts;
    std::vector<std::shared_ptr<DeviceTensor>> outs;
    for (int t = 0; t < 5; ++t) {
      hosts.emplace_back();
      auto in = filled(DataType::kFloat32, {size + t}, rng, &hosts.back());
      outs.push_back(std::make_shared<DeviceTensor>(DataType::kFloat32, TensorShape{size + t}));
      entries.push_back(entry(CollectiveType::kAllreduce, "g" + std::to_string(t), in, outs.back()));
      entries.back().request.op = ReduceOp::kAverage;
      entries.back().request.prescale = 0.5;  // the pack step scales (factor) as it copies
      entries.back().request.postscale = 2.0;
    }
    REQUIRE(run(*rank.ops, response_for(ResponseType::kAllreduce, entries), entries).is_ok());
    for (int t = 0; t < 5; ++t) CHECK(outs[size_t(t)]->download() == expected_allreduce(hosts[size_t(t)], DataType::kFloat32, 0.5, 2.0));
  }
  CHECK(finished_tensors.load() == 10);  // on_finish ran before the handles completed
  CHECK(traced_tensors.load() == 10);
  CHECK(traced_before_finish.load() == 2);
}

TEST_CASE("Broadcast, allgather, alltoall and reducescatter at one rank", "[device][nccl_ops]") {
  OneRank rank;
  std::mt19937_64 rng(7);
  std::vector<char> host;
  auto in = filled(DataType::kBFloat16, {6, 3}, rng, &host);
  auto out = std::make_shared<DeviceTensor>(DataType::kBFloat16, TensorShape{6, 3});
  REQUIRE(run(*rank.ops, response_for(ResponseType::kBroadcast, {entry(CollectiveType::kBroadcast, "b", in, out)}),
              {entry(CollectiveType::kBroadcast, "b", in, out)}).is_ok());
  CHECK(out->download() == host);

  TensorEntry g = entry(CollectiveType::kAllgather, "g", in, nullptr);
  Response ag = response_for(ResponseType::kAllgather, {g});
  ag.first_dims = {6};
  auto gh = g.handle;
  REQUIRE(run(*rank.ops, ag, {g}).is_ok());
  auto gathered = std::dynamic_pointer_cast<DeviceTensor>(gh->output());
  REQUIRE(gathered);
  CHECK(gathered->shape() == TensorShape({6, 3}));
  CHECK(gathered->download() == host);

  TensorEntry a = entry(CollectiveType::kAlltoall, "a", in, nullptr);
  a.request.splits = {6};
  Response aa = response_for(ResponseType::kAlltoall, {a});
  aa.splits = {6};
  auto ah = a.handle;
  REQUIRE(run(*rank.ops, aa, {a}).is_ok());
  CHECK(std::dynamic_pointer_cast<DeviceTensor>(ah->output())->download() == host);
  CHECK(ah->received_splits() == std::vector<int64_t>{6});

  TensorEntry r = entry(CollectiveType::kReducescatter, "r", in, nullptr);
  r.request.op = ReduceOp::kAverage;
  auto rh = r.handle;
  REQUIRE(run(*rank.ops, response_for(ResponseType::kReducescatter, {r}), {r}).is_ok());
  CHECK(std::dynamic_pointer_cast<DeviceTensor>(rh->output())->download() == host);
}

namespace {
void CUDART_CB sleep_ms(void* ms) { std::this_thread::sleep_for(std::chrono::milliseconds(*static_cast<int*>(ms))); }

/// A framework's stream and the ready point Chorus would record on it.
struct Producer {
  Producer() {
    REQUIRE(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess);
    REQUIRE(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming) == cudaSuccess);
  }
  ~Producer() {
    cudaStreamSynchronize(stream);
    cudaEventDestroy(ready);
    cudaStreamDestroy(stream);
  }
  gpu::NcclOperationsSettings settings(double timeout = 600) const {
    gpu::NcclOperationsSettings s;
    s.op_timeout_seconds = timeout;
    s.ready_event = [e = ready](const TensorEntry&) -> void* { return e; };
    return s;
  }
  cudaStream_t stream;
  cudaEvent_t ready;
};
}  // namespace

TEST_CASE("The launch waits for a slow producer stream on the device", "[device][nccl_ops]") {
  Producer p;
  cudaStream_t producer = p.stream;
  cudaEvent_t ready = p.ready;
  OneRank rank(p.settings());
  std::vector<char> host(4096 * 4, 0), later_bytes(4096 * 4, 9);
  char* later = nullptr;  // pinned: a pageable source could make cudaMemcpyAsync wait on the host
  REQUIRE(cudaMallocHost(reinterpret_cast<void**>(&later), later_bytes.size()) == cudaSuccess);
  std::memcpy(later, later_bytes.data(), later_bytes.size());
  auto in = std::make_shared<DeviceTensor>(DataType::kFloat32, TensorShape{4096});
  in->upload(host);
  REQUIRE(cudaEventRecord(ready, producer) == cudaSuccess);
  TensorEntry warm = entry(CollectiveType::kAllreduce, "warm", in, in);  // makes the communicator
  REQUIRE(run(*rank.ops, response_for(ResponseType::kAllreduce, {warm}), {warm}).is_ok());
  static int delay = 300;
  REQUIRE(cudaLaunchHostFunc(producer, sleep_ms, &delay) == cudaSuccess);  // the producer is still busy...
  REQUIRE(cudaMemcpyAsync(in->mutable_data(), later, later_bytes.size(), cudaMemcpyHostToDevice, producer) == cudaSuccess);
  REQUIRE(cudaEventRecord(ready, producer) == cudaSuccess);  // ...when the tensor is enqueued
  auto out = std::make_shared<DeviceTensor>(DataType::kFloat32, TensorShape{4096});
  TensorEntry e = entry(CollectiveType::kAllreduce, "late", in, out);
  const auto start = std::chrono::steady_clock::now();
  auto h = e.handle;
  REQUIRE(cudaEventQuery(ready) == cudaErrorNotReady);  // the producer really is behind
  rank.ops->execute(response_for(ResponseType::kAllreduce, {e}), {e});
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::milliseconds(100));  // execute never waits
  REQUIRE(h->wait(std::chrono::milliseconds(10000)).is_ok());
  CHECK(out->download() == later_bytes);
  REQUIRE(cudaStreamSynchronize(producer) == cudaSuccess);
  cudaFreeHost(later);
}

TEST_CASE("An operation past its timeout faults, fails naming the tensor, and abort returns", "[device][nccl_ops]") {
  Producer p;
  cudaStream_t producer = p.stream;
  cudaEvent_t ready = p.ready;
  OneRank rank(p.settings(0.3));
  static int delay = 2000;
  REQUIRE(cudaLaunchHostFunc(producer, sleep_ms, &delay) == cudaSuccess);
  REQUIRE(cudaEventRecord(ready, producer) == cudaSuccess);
  auto in = std::make_shared<DeviceTensor>(DataType::kFloat32, TensorShape{1024});
  TensorEntry e = entry(CollectiveType::kAllreduce, "stuck.grad", in, in);
  auto h = e.handle;
  rank.ops->execute(response_for(ResponseType::kAllreduce, {e}), {e});
  const Status s = h->wait(std::chrono::milliseconds(1500));
  CHECK(s.code() == StatusCode::kTimeout);
  CHECK_THAT(s.message(), Catch::Contains("stuck.grad"));
  CHECK_THAT(s.message(), Catch::Contains("CHORUS_GPU_OP_TIMEOUT_SECONDS"));
  CHECK(rank.ops->fault().message() == s.message());
  // The producer finishes first, so the abort never meets a kernel still
  // queued behind it (docs/architecture.md: a producer that never finishes
  // is beyond what Chorus can end).
  REQUIRE(cudaStreamSynchronize(producer) == cudaSuccess);
  rank.ops->abort(rank.ops->fault());
  TensorEntry after = entry(CollectiveType::kAllreduce, "after", in, in);
  auto ha = after.handle;
  rank.ops->execute(response_for(ResponseType::kAllreduce, {after}), {after});
  CHECK(ha->done());  // refused at once after a fault
}
