// One GPU serves one NCCL communicator (host only; device/cuda/launch_order.h).
#include <catch2/catch.hpp>

#include <atomic>
#include <thread>
#include <vector>

#include "device/cuda/launch_order.h"

using namespace chorus;
using namespace chorus::detail::gpu;

TEST_CASE("The first set to launch on a GPU owns it; another set is refused naming both", "[host][launch_order]") {
  CommunicatorClaims claims;
  CHECK(claims.owner(0) == -1);
  CHECK(claims.claim(0, 2, "a").is_ok());
  CHECK(claims.claim(0, 2, "b").is_ok());  // the same set again
  CHECK(claims.claim(1, 0, "c").is_ok());  // another GPU is free
  const Status s = claims.claim(0, 0, "grad.w");
  CHECK(s.code() == StatusCode::kPreconditionError);
  CHECK_THAT(s.message(), Catch::Contains("'grad.w' in the global process set"));
  CHECK_THAT(s.message(), Catch::Contains("GPU 0 already runs the NCCL collectives of process set 2"));
  CHECK_THAT(s.message(), Catch::Contains("CHORUS_GPU_OPERATIONS=staged"));
  CHECK(claims.owner(0) == 2);
  CHECK(claims.owner(1) == 0);
}

TEST_CASE("Sets racing for one GPU: exactly one wins", "[host][launch_order]") {
  CommunicatorClaims claims;
  std::atomic<int> won{0};
  std::vector<std::thread> threads;
  for (int set = 0; set < 8; ++set)
    threads.emplace_back([&, set] { won += claims.claim(3, set, "t").is_ok(); });
  for (auto& t : threads) t.join();
  CHECK(won.load() == 1);
  CHECK(claims.owner(3) >= 0);
}
