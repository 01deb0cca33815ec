// Waiting for a non-blocking NCCL communicator, with a fake poll and clock (host only).
#include <catch2/catch.hpp>

#include <chrono>

#include "device/cuda/nccl_wait.h"

using namespace chorus;
using namespace chorus::detail::gpu;
using namespace std::chrono_literals;

namespace {

struct FakeClock {
  std::chrono::steady_clock::time_point t = std::chrono::steady_clock::time_point() + 1h;
  SteadyNow fn() {
    return [this] { return t; };
  }
};

OpDeadline deadline_at(std::chrono::steady_clock::time_point at, double seconds) {
  OpDeadline d;
  d.at = at;
  d.seconds = seconds;
  return d;
}

}  // namespace

TEST_CASE("wait_in_progress returns once the communicator leaves 'in progress'", "[host][nccl_wait]") {
  FakeClock clock;
  int polls = 0;
  auto poll = [&] { return ++polls < 100 ? Status::in_progress() : Status::ok(); };
  CHECK(wait_in_progress(poll, deadline_at(clock.t + 1s, 1), "ncclGroupEnd", clock.fn()).is_ok());
  CHECK(polls == 100);
}

TEST_CASE("wait_in_progress passes the communicator's error on, naming the call", "[host][nccl_wait]") {
  FakeClock clock;
  int polls = 0;
  auto poll = [&] { return ++polls < 3 ? Status::in_progress() : Status::unknown_error("ncclRemoteError"); };
  const Status s = wait_in_progress(poll, OpDeadline(), "ncclAllReduce (GPU allreduce of 'grad.w')", clock.fn());
  CHECK(s.code() == StatusCode::kUnknownError);
  CHECK(s.message() == "ncclAllReduce (GPU allreduce of 'grad.w'): ncclRemoteError");
}

TEST_CASE("wait_in_progress gives up at the deadline, naming the operation and the knob", "[host][nccl_wait]") {
  FakeClock clock;
  int polls = 0;
  auto poll = [&] {
    if (++polls == 10) clock.t += 5s;  // a peer that never launches
    return Status::in_progress();
  };
  const Status s =
      wait_in_progress(poll, deadline_at(clock.t + 2s, 2), "ncclGroupEnd (GPU alltoall of 'x')", clock.fn());
  CHECK(s.code() == StatusCode::kTimeout);
  CHECK_THAT(s.message(), Catch::Contains("ncclGroupEnd (GPU alltoall of 'x') was still in progress after 2 s"));
  CHECK_THAT(s.message(), Catch::Contains("CHORUS_GPU_OP_TIMEOUT_SECONDS"));
  CHECK(polls == 10);
}

TEST_CASE("An operation deadline of zero seconds is none", "[host][nccl_wait]") {
  CHECK(OpDeadline::after(0).at == std::chrono::steady_clock::time_point::max());
  const auto before = std::chrono::steady_clock::now();
  const OpDeadline d = OpDeadline::after(3);
  CHECK(d.seconds == 3);
  CHECK(d.at >= before + 3s);
  CHECK(d.at < before + 4s);
}
