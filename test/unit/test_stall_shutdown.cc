// The stall shutdown on in-process ranks: when it comes, that it ends the
// job (Backend::end_job), the bounded close that ends a job a rank no
// longer answers, and the watchdog on collectives that never end.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <thread>

#include "chorus/error.h"
#include "loopback_job.h"
#include "engine/collective_watchdog.h"
#include "engine/job_end.h"
#include "stderr_capture.h"

using namespace chorus;
using namespace chorus::detail;
using Clock = std::chrono::steady_clock;

namespace {

std::shared_ptr<HostTensorView> view(std::vector<float>& v) {
  return std::make_shared<HostTensorView>(v.data(), DataType::kFloat32, TensorShape{static_cast<int64_t>(v.size())});
}

// Rank 0 submits "x" `delay` after the runtimes started; rank 1 never does.
// Returns how long after its enqueue "x" failed on rank 0.
// `check_seconds`: the stall check's period as the options give it (-1: S).
double seconds_to_stall_shutdown(const std::shared_ptr<LoopbackWorld>& world, double stall_seconds,
                                 std::chrono::milliseconds delay, double check_seconds = -1) {
  RuntimeOptions o = chorus::test::quiet_options();
  o.log_level = LogLevel::kFatal;  // the stall lines are expected here
  o.stall_check_seconds = check_seconds < 0 ? stall_seconds : check_seconds;
  o.stall_shutdown_seconds = stall_seconds;
  double waited = 0;
  chorus::test::run_ranks(world, 2, [&](Runtime& rt, int rank) {
    if (rank != 0) {
      for (int i = 0; i < 500 && rt.is_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      RANK_CHECK(!rt.is_running());
      return;
    }
    std::this_thread::sleep_for(delay);
    std::vector<float> v(4, 1);
    const auto start = Clock::now();
    Handle h = rt.allreduce_async("x", view(v), view(v));
    try {
      h.wait(std::chrono::seconds(20));
    } catch (const AbortedError& e) {
      waited = std::chrono::duration<double>(Clock::now() - start).count();
      const std::string expected = "stall shutdown after " + std::to_string(int(stall_seconds)) + " s: tensor 'x'";
      RANK_CHECK(std::string(e.what()).find(expected) != std::string::npos);
      return;
    }
    throw std::runtime_error("expected a stall shutdown");
  }, o);
  return waited;
}

}  // namespace

TEST_CASE("The stall shutdown comes S after the stall began, not at the next fixed-period check", "[stall][runtime]") {
  // A fixed period of S from the start would look at 2 s (x is 1 s old)
  // and then at 4 s: 3 s after the stall. Wide margins: a loaded machine
  // oversleeps, but not by a second.
  auto world = make_loopback_world(2);
  const double waited = seconds_to_stall_shutdown(world, 2.0, std::chrono::milliseconds(1000));
  REQUIRE(waited >= 1.95);
  REQUIRE(waited < 2.7);
}

TEST_CASE("Options built in code: a stall shutdown comes without the check, or before a later one",
          "[stall][runtime]") {
  // As from the environment (CHORUS_STALL_SHUTDOWN_TIME_SECONDS alone): the
  // check that notices the stall runs every S seconds.
  for (double check : {0.0, 60.0}) {
    auto world = make_loopback_world(2);
    const double waited = seconds_to_stall_shutdown(world, 1.0, std::chrono::milliseconds(0), check);
    INFO("stall_check_seconds " << check);
    REQUIRE(waited >= 0.95);
    REQUIRE(waited < 2.5);
  }
}

TEST_CASE("A stall shutdown ends the job with exit code 75", "[stall][runtime]") {
  auto world = make_loopback_world(2);
  REQUIRE(loopback_exit_code(world) == -1);
  seconds_to_stall_shutdown(world, 1.0, std::chrono::milliseconds(0));
  REQUIRE(loopback_exit_code(world) == kStallShutdownExitCode);
  REQUIRE(kStallShutdownExitCode == 75);
}

TEST_CASE("A shutdown that every rank closes leaves the job running", "[stall][runtime]") {
  auto world = make_loopback_world(2);
  chorus::test::run_ranks(world, 2, [](Runtime& rt, int rank) {
    std::vector<float> v(4, 1);
    rt.allreduce_async("y", view(v), view(v)).wait();
    if (rank == 1) rt.shutdown();
  }, chorus::test::quiet_options());
  REQUIRE(loopback_exit_code(world) == -1);
}

TEST_CASE("A joined rank hears from rank 0 while the others go on without collectives", "[stall][runtime][join]") {
  // Rank 1 joins at once; rank 0 spends 2 x S without any collective (an
  // evaluation pass), then joins too. Rank 1's watch of rank 0 must stay
  // quiet: rank 0 is alive, only busy. (S = 1 s: at 0.5 s a loaded 2-core
  // machine once delayed rank 0's word past it in a full ctest run.)
  auto world = make_loopback_world(2);
  RuntimeOptions o = chorus::test::stall_options(0.5, 1.0);
  o.log_level = LogLevel::kWarning;
  chorus::test::StderrCapture err;
  chorus::test::run_ranks(world, 2, [](Runtime& rt, int rank) {
    if (rank == 0) std::this_thread::sleep_for(std::chrono::seconds(2));
    Handle h = rt.join_async();
    h.wait(std::chrono::seconds(20));
    RANK_CHECK(h.last_joined_rank() == 0);
  }, o);
  REQUIRE(loopback_exit_code(world) == -1);
  REQUIRE_THAT(err.text(), !Catch::Contains("no word from the coordinator"));
}

namespace {

// A control channel whose close says whether every rank got there.
class ClosingChannel final : public ControlChannel {
 public:
  explicit ClosingChannel(bool answered) : answered_(answered) {}
  Status send_to_coordinator(std::string) override { return Status::ok(); }
  bool poll_from_workers(int*, std::string*) override { return false; }
  Status send_to_workers(const std::string&) override { return Status::ok(); }
  bool poll_from_coordinator(std::string*) override { return false; }
  bool close(std::chrono::milliseconds bound) override {
    bound_ = bound;
    return answered_;
  }
  std::vector<int> not_at_close() const override { return missing_; }
  std::chrono::milliseconds bound_{0};
  std::vector<int> missing_;  // whom close() says it missed

 private:
  bool answered_;
};

// The loopback backend with that channel.
class ClosingBackend final : public Backend {
 public:
  ClosingBackend(std::shared_ptr<LoopbackWorld> world, bool answered)
      : inner_(make_loopback_backend(std::move(world), 0)), channel_(answered) {}
  Status start() override { return inner_->start(); }
  void stop() override { inner_->stop(); }
  Topology topology() const override { return inner_->topology(); }
  ControlChannel& control() override { return channel_; }
  Communicator& collectives() override { return inner_->collectives(); }
  PeerLink& peer_link() override { return inner_->peer_link(); }
  const SharedSlots* shared_slots() const override { return inner_->shared_slots(); }
  Status split(int32_t id, const std::vector<int>& members, std::unique_ptr<Backend>* out) override {
    return inner_->split(id, members, out);
  }
  void end_job(int exit_code) override { inner_->end_job(exit_code); }
  ClosingChannel& channel() { return channel_; }

 private:
  std::unique_ptr<Backend> inner_;
  ClosingChannel channel_;
};

// close_or_end_job on a rank whose peers did or did not answer; returns the
// job's exit code (-1: not ended) and what the rank logged.
int end_of(bool answered, bool stall, std::string* logged, std::vector<int> missing = {}) {
  auto world = make_loopback_world(1);
  ClosingBackend backend(world, answered);
  backend.channel().missing_ = std::move(missing);
  Logger logger;
  chorus::test::StderrCapture err;
  close_or_end_job(backend, logger, LoopEnd{"Chorus was shut down (rank 1 called shutdown())", stall},
                   std::chrono::milliseconds(1234));
  REQUIRE(backend.channel().bound_ == std::chrono::milliseconds(1234));
  *logged = err.text();
  return loopback_exit_code(world);
}

}  // namespace

TEST_CASE("A shutdown a rank never answers ends the job with exit code 76; a stall shutdown always with 75", "[stall]") {
  std::string logged;
  REQUIRE(end_of(true, false, &logged) == -1);
  REQUIRE(logged.empty());
  REQUIRE(end_of(false, false, &logged) == kUnansweredShutdownExitCode);
  REQUIRE_THAT(logged, Catch::Contains("some rank did not get to the close within 1.234 s") &&
                           Catch::Contains("ending the job with exit code 76 after: Chorus was shut down (rank 1"));
  // A transport that knows who is missing names them.
  REQUIRE(end_of(false, false, &logged, {2, 3}) == kUnansweredShutdownExitCode);
  REQUIRE_THAT(logged, Catch::Contains("shutdown: ranks 2, 3 did not get to the close within 1.234 s"));
  REQUIRE(end_of(true, true, &logged) == kStallShutdownExitCode);
  REQUIRE_THAT(logged, Catch::Contains("ending the job with exit code 75"));
  REQUIRE(end_of(false, true, &logged) == kStallShutdownExitCode);
  REQUIRE(kUnansweredShutdownExitCode == 76);
}

TEST_CASE("The collective watchdog warns at N inside one collective and ends the job at S", "[stall]") {
  const RuntimeOptions o = chorus::test::stall_options(0.2, 0.5);
  Logger logger;
  std::atomic<int> ended{-1};
  chorus::test::StderrCapture err;
  {
    CollectiveWatchdog watchdog(o, logger, [&](int code) { ended = code; });
    const auto start = Clock::now();
    const std::vector<std::string> names{"grad.a", "grad.b"};
    watchdog.entered(names);
    while (ended == -1 && Clock::now() - start < std::chrono::seconds(5)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    const double waited = std::chrono::duration<double>(Clock::now() - start).count();
    REQUIRE(ended == kStallShutdownExitCode);
    REQUIRE(waited >= 0.5);
    REQUIRE(waited < 1.5);  // at S, give or take a loaded machine's oversleep
  }
  const std::string text = err.text();
  REQUIRE_THAT(text, Catch::Contains("[chorus WARN] stall: this rank has been inside the collective of tensor "
                                     "'grad.a' and 1 more fused with it"));
  REQUIRE_THAT(text, Catch::Contains("[chorus ERROR] stall shutdown after 0.5 s: this rank has been inside the "
                                     "collective of tensor 'grad.a'") &&
                         Catch::Contains("ending the job with exit code 75"));
}

TEST_CASE("The collective watchdog says nothing about collectives that end in time", "[stall]") {
  const RuntimeOptions o = chorus::test::stall_options(1.0, 2.0);
  Logger logger;
  std::atomic<int> ended{-1};
  chorus::test::StderrCapture err;
  {
    CollectiveWatchdog watchdog(o, logger, [&](int code) { ended = code; });
    for (int i = 0; i < 25; ++i) {  // 25 collectives of 0.1 s each (N/10): 2.5 s inside collectives in all
      const std::vector<std::string> names{"t" + std::to_string(i)};
      watchdog.entered(names);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      watchdog.left();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2200));  // and outside for longer than S
  }
  REQUIRE(ended == -1);
  REQUIRE(err.text().empty());
}
