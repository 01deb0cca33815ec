// Uses the installed headers and library: one allreduce over all ranks.
#include <chorus/chorus.h>

#include <cstdio>
#include <memory>

int main() {
  chorus::init();
  float v = static_cast<float>(chorus::rank() + 1);
  auto t = std::make_shared<chorus::HostTensorView>(&v, chorus::DataType::kFloat32, chorus::TensorShape{1});
  chorus::AllreduceOptions sum;
  sum.op = chorus::ReduceOp::kSum;
  chorus::allreduce_async("consumer", t, t, sum).wait();
  // The library's exceptions are caught by type here (their type
  // information is exported; everything internal is not).
  bool caught = false;
  try {
    chorus::allreduce_async("", t, t, sum);
  } catch (const chorus::InvalidArgumentError&) {
    caught = true;
  }
  const int n = chorus::size();
  const bool ok = caught && v == static_cast<float>(n * (n + 1) / 2);
  std::printf("consumer rank %d: %s (Chorus %s)\n", chorus::rank(), ok ? "ok" : "WRONG", chorus::version());
  chorus::shutdown();
  return ok ? 0 : 1;
}
