// On a GPU: CUDA tensors end to end through the staged path, two in-process
// ranks on one GPU (which NCCL refuses), with a slow producer stream: the
// runtime, the CUDA device memory and the CPU data plane together.
#include <catch2/catch.hpp>

#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "chorus/runtime.h"
#include "comm/loopback/loopback_backend.h"
#include "device_buffer.h"
#include "api/runtime_access.h"
#include "device/build_support.h"

using namespace chorus;
using namespace chorus::detail;
using chorus::test::DeviceBuffer;

namespace {

void CUDART_CB sleep_50ms(void*) { std::this_thread::sleep_for(std::chrono::milliseconds(50)); }

// Allocates outputs with cudaMalloc on device 0 (kept by the tensor).
class CudaOutputs final : public OpContext {
 public:
  Status allocate_output(const TensorShape& shape, DataType dtype, std::shared_ptr<Tensor>* out) override {
    void* p = nullptr;
    const int64_t bytes = shape.num_elements() * dtype_size(dtype);
    if (cudaMalloc(&p, static_cast<size_t>(bytes > 0 ? bytes : 1)) != cudaSuccess) return Status::unknown_error("cudaMalloc");
    struct Owned {
      std::shared_ptr<void> memory;
      DeviceTensorView view;
    };
    auto owned = std::make_shared<Owned>(
        Owned{std::shared_ptr<void>(p, [](void* q) { cudaFree(q); }), DeviceTensorView(p, dtype, shape, 0, nullptr)});
    *out = std::shared_ptr<Tensor>(owned, &owned->view);  // the tensor keeps its memory
    return Status::ok();
  }
  Status allocate_zeros(const TensorShape&, DataType, std::shared_ptr<Tensor>*) override {
    return Status::internal("no zeros on the device");
  }
};

}  // namespace

TEST_CASE("Staged CUDA collectives: two ranks on one GPU, a slow producer", "[device][staged]") {
  RuntimeOptions options;
  options.log_level = LogLevel::kError;
  options.gpu_operations = GpuOperations::kStaged;
  auto world = make_loopback_world(2, 0);
  auto support = std::make_shared<const DeviceSupport>(build_device_support());
  std::vector<std::unique_ptr<Runtime>> runtimes;
  for (int r = 0; r < 2; ++r) runtimes.push_back(RuntimeAccess::make(make_loopback_backend(world, r), options, support));
  std::vector<std::string> failures(2);
  const size_t n = 1000;
  // Made here: Catch2's assertions (DeviceBuffer's) are not thread-safe, and
  // two rank threads asserting at once corrupted its state (seen on an H200).
  std::vector<std::unique_ptr<DeviceBuffer>> grads;
  for (int rank = 0; rank < 2; ++rank) grads.push_back(std::make_unique<DeviceBuffer>(n * sizeof(float)));
  std::vector<std::thread> threads;
  for (int rank = 0; rank < 2; ++rank) {
    threads.emplace_back([&, rank] {
      Runtime& rt = *runtimes[static_cast<size_t>(rank)];
      cudaSetDevice(0);
      cudaStream_t producer = nullptr;
      cudaStreamCreateWithFlags(&producer, cudaStreamNonBlocking);
      std::vector<float> mine(n, 1.0f + rank);
      DeviceBuffer& grad = *grads[static_cast<size_t>(rank)];
      cudaLaunchHostFunc(producer, sleep_50ms, nullptr);  // the backward pass is still running
      cudaMemcpyAsync(grad.data(), mine.data(), n * sizeof(float), cudaMemcpyHostToDevice, producer);
      auto t = std::make_shared<DeviceTensorView>(grad.data(), DataType::kFloat32, TensorShape{int64_t(n)}, 0, producer);
      AllreduceOptions sum;
      sum.op = ReduceOp::kSum;
      const Status s = rt.allreduce_async("grad", t, t, sum).wait_status();
      std::vector<float> got(n);
      cudaMemcpy(got.data(), grad.data(), n * sizeof(float), cudaMemcpyDeviceToHost);
      if (!s.is_ok()) failures[rank] = s.message();
      else if (got[0] != 3.0f || got[n - 1] != 3.0f) failures[rank] = "allreduce result " + std::to_string(got[0]);
      OpHooks hooks;
      hooks.context = std::make_shared<CudaOutputs>();
      Handle g = rt.allgather_async("gathered", t, hooks);
      const Status gs = g.wait_status();
      if (!gs.is_ok()) failures[rank] += " allgather: " + gs.message();
      else if (g.output()->shape() != TensorShape{int64_t(2 * n)}) failures[rank] += " allgather shape";
      cudaStreamDestroy(producer);
    });
  }
  for (auto& t : threads) t.join();
  runtimes.clear();
  CHECK(failures[0] == "");
  CHECK(failures[1] == "");
}
