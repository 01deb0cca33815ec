// The smallest useful Chorus program: every rank contributes a "gradient",
// Chorus averages it across ranks in the background, rank 0 broadcasts a
// "learning rate", and each rank checks the result. Run it with
//   mpirun -np 2 ./allreduce_demo        (or chorusrun -np 2 ./allreduce_demo)
#include <chorus/chorus.h>

#include <cstdio>
#include <memory>
#include <vector>

int main() {
  chorus::init();
  const int rank = chorus::rank(), size = chorus::size();
  std::printf("rank %d of %d (local rank %d of %d, cross rank %d of %d)\n", rank, size,
              chorus::local_rank(), chorus::local_size(), chorus::cross_rank(), chorus::cross_size());

  // Three "gradients" of different sizes, enqueued at once: Chorus fuses
  // them into one allreduce. Rank r holds the value r + 1 everywhere.
  std::vector<std::vector<float>> grads = {std::vector<float>(1000), std::vector<float>(17),
                                           std::vector<float>(1 << 16)};
  std::vector<chorus::Handle> handles;
  for (size_t i = 0; i < grads.size(); ++i) {
    std::fill(grads[i].begin(), grads[i].end(), float(rank + 1));
    auto t = std::make_shared<chorus::HostTensorView>(grads[i].data(), chorus::DataType::kFloat32,
                                                      chorus::TensorShape{int64_t(grads[i].size())});
    handles.push_back(chorus::allreduce_async("grad." + std::to_string(i), t, t));  // Average
  }
  for (auto& h : handles) h.wait();

  // Rank 0 decides, everybody learns.
  double lr = rank == 0 ? 0.1 * size : -1.0;
  auto lr_view = std::make_shared<chorus::HostTensorView>(&lr, chorus::DataType::kFloat64, chorus::TensorShape{1});
  chorus::broadcast_async("lr", lr_view, 0).wait();

  const float want = float(size + 1) / 2.0f;  // mean of 1..size
  int wrong = 0;
  for (const auto& g : grads) {
    for (float v : g) wrong += v != want;
  }
  wrong += lr != 0.1 * size;
  const chorus::RuntimeStats st = chorus::runtime().stats();
  std::printf("rank %d: averaged %lld tensors in %lld allreduce call(s) (%lld fused), "
              "mean gradient %.3f (want %.3f), lr %.2f, %d wrong value(s)\n",
              rank, (long long)st.tensors_allreduced, (long long)st.allreduce_ops,
              (long long)st.fused_allreduce_ops, grads[0][0], want, lr, wrong);
  chorus::shutdown();
  return wrong == 0 ? 0 : 1;
}
