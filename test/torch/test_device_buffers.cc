// The LibTorch adapter's device rules without a GPU: where
// DistributedOptimizer's flat gradient buffers go, the refusal of CUDA
// parameters on two devices, what a LibTorch without CUDA (or before 2.2)
// says when asked for a CUDA stream, host TorchTensors and TorchOpContext,
// and the refusal of other devices. One process, no collectives.
#include <functional>
#include <string>

#include <torch/torch.h>

#include "chorus/error.h"
#include "device_buffers.h"
#include "device_stream.h"
#include "torch_tensor.h"

// Debian's LibTorch logs through glog, whose CHECK would shadow Catch's.
#undef CHECK
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

using chorus::torch_adapter::check_one_cuda_device;
using chorus::torch_adapter::group_gradient_buffers;

namespace {

std::string refusal(const std::function<void()>& call) {
  try {
    call();
  } catch (const chorus::InvalidArgumentError& e) {
    return e.status().message();
  }
  return "<no error>";
}

}  // namespace

TEST_CASE("gradient buffers: one per device and dtype, in layout order", "[device]") {
  const std::vector<torch::Tensor> params = {torch::zeros({2}), torch::zeros({3}, torch::kFloat64), torch::zeros({4}),
                                             torch::zeros({1}, torch::kFloat64), torch::zeros({5}, torch::kFloat16)};
  const auto buffers = group_gradient_buffers(params, {3, 0, 4, 2, 1});
  REQUIRE(buffers.size() == 3);
  CHECK(buffers[0].dtype == torch::kFloat64);
  CHECK((buffers[0].members == std::vector<size_t>{3, 1}));
  CHECK(buffers[1].dtype == torch::kFloat32);
  CHECK((buffers[1].members == std::vector<size_t>{0, 2}));
  CHECK(buffers[2].dtype == torch::kFloat16);
  CHECK((buffers[2].members == std::vector<size_t>{4}));
  for (const auto& b : buffers) CHECK(b.device == torch::Device(torch::kCPU));
  CHECK(group_gradient_buffers(params, {}).empty());
}

TEST_CASE("CUDA parameters on two devices are refused, naming both", "[device]") {
  using Named = std::vector<std::pair<std::string, torch::Device>>;
  const torch::Device cpu(torch::kCPU), gpu0(torch::kCUDA, 0), gpu1(torch::kCUDA, 1);
  CHECK_NOTHROW(check_one_cuda_device(Named{{"a", cpu}, {"b", gpu1}, {"c", cpu}, {"d", gpu1}}, "DistributedOptimizer"));
  CHECK_NOTHROW(check_one_cuda_device(Named{{"a", cpu}, {"b", cpu}}, "DistributedOptimizer"));
  CHECK(refusal([&] { check_one_cuda_device(Named{{"a", cpu}, {"fc1.w", gpu0}, {"fc2.w", gpu1}}, "DistributedOptimizer"); }) ==
        "DistributedOptimizer: parameter 'fc2.w' is on cuda:1 but 'fc1.w' on cuda:0; a rank's CUDA parameters must "
        "be on one device");
}

TEST_CASE("a CUDA stream from a LibTorch without CUDA is a clear error", "[device]") {
  if (torch::cuda::is_available()) {
    SUCCEED("this LibTorch has CUDA: the GPU test covers it");
    return;
  }
  const std::string message =
      refusal([] { chorus::torch_adapter::current_cuda_stream(torch::Device(torch::kCUDA, 0), "allreduce of 'w'"); });
  CHECK(message == "allreduce of 'w': the tensor is on cuda:0 but this LibTorch has no CUDA support "
                   "(libc10_cuda is not loaded)");
  CHECK(refusal([] { chorus::torch_adapter::current_cuda_stream(torch::Device(torch::kCPU), "x"); }) ==
        "x: cpu is not a CUDA device");
}

namespace {

// Stand-ins for LibTorch's CUDA guard impl: 2.2+ (names the stream), the
// interface's default (throws), and 1.x (no such call).
struct NamesStream {
  void* getStreamNativeHandle(const c10::Stream& s) const { return reinterpret_cast<void*>(0x1000 + s.id()); }
};
struct DefaultThrows {
  void* getStreamNativeHandle(const c10::Stream&) const {
    TORCH_CHECK(false, "Backend doesn't support getting stream native handle.");
  }
};
struct OldLibTorch {};

const c10::Stream kStream(c10::Stream::UNSAFE, c10::Device(c10::DeviceType::CUDA, 0), 7);

}  // namespace

TEST_CASE("the stream's handle comes from the guard impl, or a clear error", "[device]") {
  using chorus::torch_adapter::native_stream_handle;
  CHECK(native_stream_handle(NamesStream(), kStream, "w") == reinterpret_cast<void*>(0x1007));
  CHECK(refusal([] { native_stream_handle(DefaultThrows(), kStream, "allgather of 'w'"); }) ==
        "allgather of 'w': this LibTorch cannot name the CUDA stream: Backend doesn't support getting stream "
        "native handle.");
  CHECK_THAT(refusal([] { native_stream_handle(OldLibTorch(), kStream, "allgather of 'w'"); }),
             Catch::StartsWith("allgather of 'w': this LibTorch cannot name a CUDA stream from libc10 "
                               "(DeviceGuardImplInterface::getStreamNativeHandle is LibTorch 2.2 or newer)"));
}

TEST_CASE("host tensors keep no stream; other devices are refused, naming the tensor", "[device]") {
  using namespace chorus::torch_adapter;
  const auto host = wrap(torch::ones({2, 3}));
  CHECK(host->device() == chorus::kCpuDevice);
  CHECK(host->stream() == nullptr);
  std::shared_ptr<chorus::Tensor> out;
  REQUIRE(TorchOpContext(torch::kCPU).allocate_zeros(chorus::TensorShape({4}), chorus::DataType::kFloat16, &out).is_ok());
  CHECK(unwrap(out).device() == torch::Device(torch::kCPU));
  CHECK(unwrap(out).scalar_type() == torch::kFloat16);
  CHECK(refusal([] { check_tensor(torch::empty({2}, torch::Device(torch::kMeta)), "allreduce of tensor 'w'"); }) ==
        "allreduce of tensor 'w': the tensor is on meta; Chorus moves host (CPU) and CUDA tensors only");
}
