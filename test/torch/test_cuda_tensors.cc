// CUDA tensors through the LibTorch adapter at one rank, on this machine's
// GPU: allreduce, allgather, broadcast, broadcast_parameters /
// broadcast_optimizer_state and three DistributedOptimizer steps (plain and
// fp16), each against the same computation on the CPU. Run once per
// CHORUS_GPU_OPERATIONS (nccl, staged) by CTest, label gpu. Exits 77
// (skipped) when this LibTorch has no usable CUDA device or Chorus was built
// without GPU support.
#include <cstdio>

#include <torch/torch.h>

#include "chorus/chorus.h"
#include "chorus/torch/broadcast_state.h"
#include "chorus/torch/distributed_optimizer.h"
#include "chorus/torch/ops.h"

// LibTorch's glog CHECK would shadow Catch's.
#undef CHECK
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

using namespace chorus;

namespace {

const torch::Device kGpu(torch::kCUDA, 0);

void require_on_gpu(const torch::Tensor& t) {
  REQUIRE(t.device() == kGpu);
}

// Three steps of Adam through DistributedOptimizer on `device`; the parameters after them, on the host.
std::vector<torch::Tensor> train(torch::Device device, std::shared_ptr<Compression> compression, const std::string& tag) {
  torch::manual_seed(42);
  torch::nn::Sequential net(torch::nn::Linear(8, 16), torch::nn::Tanh(), torch::nn::Linear(16, 4));
  net->to(device);
  auto adam = std::make_shared<torch::optim::Adam>(net->parameters(), torch::optim::AdamOptions(0.01));
  DistributedOptimizerOptions options;
  options.compression = std::move(compression);
  options.name_prefix = tag + ".";
  DistributedOptimizer opt(adam, net->named_parameters(), options);
  broadcast_parameters(*net, 0);
  broadcast_optimizer_state(opt, 0);
  torch::manual_seed(7);
  const torch::Tensor x = torch::randn({12, 8}).to(device), y = torch::randn({12, 4}).to(device);
  for (int step = 0; step < 3; ++step) {
    opt.zero_grad();
    torch::mse_loss(net->forward(x), y).backward();
    opt.step();
  }
  for (const auto& p : net->parameters()) REQUIRE(p.grad().device() == device);
  broadcast_optimizer_state(opt, 0);  // state now holds CUDA moments: through the host and back
  std::vector<torch::Tensor> out;
  for (const auto& p : net->parameters()) out.push_back(p.detach().cpu());
  return out;
}

}  // namespace

TEST_CASE("allreduce of a CUDA tensor matches the CPU", "[cuda]") {
  torch::manual_seed(1);
  const torch::Tensor host = torch::randn({1000, 3});
  const torch::Tensor gpu = host.to(kGpu) * 2;  // written by a kernel just before the enqueue
  AllreduceOptions sum;
  sum.op = ReduceOp::kSum;
  const torch::Tensor out = allreduce(gpu, "cuda.allreduce", sum);
  require_on_gpu(out);
  CHECK(torch::equal(out.cpu(), allreduce(host * 2, "cpu.allreduce", sum)));
  torch::Tensor in_place = host.to(kGpu, torch::kFloat16);
  allreduce_(in_place, "cuda.allreduce_", AllreduceOptions());
  CHECK(torch::equal(in_place.cpu(), host.to(torch::kFloat16)));
}

TEST_CASE("allgather and broadcast of CUDA tensors match the CPU", "[cuda]") {
  const torch::Tensor host = torch::arange(0, 35, torch::kInt64).reshape({5, 7});
  const torch::Tensor gathered = allgather(host.to(kGpu), "cuda.allgather");
  require_on_gpu(gathered);
  CHECK(torch::equal(gathered.cpu(), allgather(host, "cpu.allgather")));
  const auto grouped = grouped_allgather({host.to(kGpu), host.to(kGpu).t().contiguous()}, "cuda.grouped");
  require_on_gpu(grouped[1]);
  CHECK(torch::equal(grouped[1].cpu(), host.t()));
  torch::Tensor b = host.to(kGpu, torch::kFloat32);
  broadcast_(b, 0, "cuda.broadcast_");
  require_on_gpu(b);
  CHECK(torch::equal(b.cpu(), host.to(torch::kFloat32)));
  const torch::Tensor out = broadcast(host.to(kGpu), 0, "cuda.broadcast");
  require_on_gpu(out);
  CHECK(torch::equal(out.cpu(), host));
}

TEST_CASE("DistributedOptimizer on CUDA parameters trains like the CPU", "[cuda]") {
  for (const auto& [name, compression] : {std::make_pair(std::string("none"), Compression::none()),
                                          std::make_pair(std::string("fp16"), Compression::fp16())}) {
    INFO("compression " << name);
    const auto gpu = train(kGpu, compression, "gpu." + name);
    const auto cpu = train(torch::kCPU, compression, "cpu." + name);
    REQUIRE(gpu.size() == cpu.size());
    for (size_t i = 0; i < gpu.size(); ++i) CHECK(torch::allclose(gpu[i], cpu[i], 1e-3, 1e-4));
  }
}

// A sparse embedding gradient that is absent at a step (as after LibTorch 2's
// zero_grad) still joins the allgather: its empty stand-in is built on the
// parameter's device, indices included.
TEST_CASE("DistributedOptimizer gathers a CUDA sparse gradient that is absent at a step", "[cuda][sparse]") {
  auto train_sparse = [](torch::Device device, const std::string& tag) {
    torch::manual_seed(3);
    torch::nn::Embedding emb(torch::nn::EmbeddingOptions(10, 4).sparse(true));
    emb->to(device);
    auto sgd = std::make_shared<torch::optim::SGD>(emb->parameters(), torch::optim::SGDOptions(0.5));
    DistributedOptimizerOptions options;
    options.name_prefix = tag + ".";
    DistributedOptimizer opt(sgd, emb->named_parameters(), options);
    for (int step = 0; step < 3; ++step) {
      opt.zero_grad();
      emb->weight.mutable_grad().reset();  // none, whatever this LibTorch's zero_grad does
      if (step != 1) emb->forward(torch::tensor({1, 3, 3}, torch::kLong).to(device)).sum().backward();
      opt.step();
    }
    return emb->weight.detach().cpu();
  };
  CHECK(torch::allclose(train_sparse(kGpu, "sparse.gpu"), train_sparse(torch::kCPU, "sparse.cpu"), 1e-5, 1e-6));
}

int main(int argc, char** argv) {
#ifndef CHORUS_TEST_HAVE_CUDA
  std::printf("skipped: this Chorus was built without GPU support (CHORUS_WITH_CUDA)\n");
  return 77;
#else
  if (!torch::cuda::is_available()) {
    std::printf("skipped: this LibTorch has no usable CUDA device\n");
    return 77;
  }
  chorus::init();
  const int result = Catch::Session().run(argc, argv);
  chorus::shutdown();
  return result;
#endif
}
