// The completion thread's ordering, fault and shutdown logic, with fake
// "done" signals and error sources in place of CUDA events and NCCL (host only).
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "device/cuda/completion_poller.h"
#include "engine/handle_state.h"

using namespace chorus;
using namespace chorus::detail;
using namespace chorus::detail::gpu;
using namespace std::chrono_literals;

namespace {

/// A signal the test finishes (or fails) by hand; counts its polls.
struct FakeWork {
  std::atomic<int> state{0};  // 0 running, 1 done, 2 failed
  std::atomic<int> polls{0};
};

class FakeSignal final : public DoneSignal {
 public:
  explicit FakeSignal(std::shared_ptr<FakeWork> work) : work_(std::move(work)) {}
  Status poll() override {
    ++work_->polls;
    const int s = work_->state.load();
    if (s == 0) return Status::in_progress();
    return s == 1 ? Status::ok() : Status::unknown_error("cudaEventQuery failed: an illegal memory access");
  }

 private:
  std::shared_ptr<FakeWork> work_;
};

class FakeErrors final : public AsyncErrorSource {
 public:
  Status poll() override {
    ++polls;
    std::lock_guard<std::mutex> lock(mu);
    return error;
  }
  std::mutex mu;
  Status error;
  std::atomic<int> polls{0};
};

/// Completion order as the callbacks saw it.
struct Order {
  std::mutex mu;
  std::vector<std::string> names;
  void add(const std::string& n) {
    std::lock_guard<std::mutex> lock(mu);
    names.push_back(n);
  }
  std::vector<std::string> get() {
    std::lock_guard<std::mutex> lock(mu);
    return names;
  }
};

TensorEntry entry(const std::string& name, Order* order) {
  TensorEntry e;
  e.request.name = name;
  e.handle = std::make_shared<HandleState>();
  if (order) e.hooks.on_complete = [order, name](const Status&) { order->add(name); };
  return e;
}

PendingBatch batch(std::vector<TensorEntry> entries, std::shared_ptr<FakeWork> work, AsyncErrorSource* errors = nullptr,
                   std::chrono::steady_clock::duration timeout = 1h) {
  PendingBatch b;
  b.what = "allreduce";
  b.entries = std::move(entries);
  b.done = std::make_unique<FakeSignal>(std::move(work));
  b.errors = errors;
  b.deadline = std::chrono::steady_clock::now() + timeout;
  b.timeout_seconds = std::chrono::duration<double>(timeout).count();
  return b;
}

Status wait(const std::shared_ptr<HandleState>& h) { return h->wait(std::chrono::milliseconds(5000)); }

}  // namespace

TEST_CASE("Batches complete in launch order even when a later one finishes first", "[host][poller]") {
  Order order;
  CompletionPoller poller;
  auto w1 = std::make_shared<FakeWork>(), w2 = std::make_shared<FakeWork>();
  auto a = entry("a", &order), b = entry("b", &order), c = entry("c", &order);
  auto ha = a.handle, hb = b.handle, hc = c.handle;
  poller.submit(batch({a}, w1));
  poller.submit(batch({b, c}, w2));
  w2->state = 1;  // the later batch's event completes first
  std::this_thread::sleep_for(30ms);
  CHECK_FALSE(hb->done());
  CHECK_FALSE(ha->done());
  CHECK(w2->polls.load() == 0);  // only the oldest batch is polled
  w1->state = 1;
  CHECK(wait(hc).is_ok());
  CHECK(wait(ha).is_ok());
  CHECK(order.get() == std::vector<std::string>{"a", "b", "c"});
  CHECK(poller.fault().is_ok());
  CHECK(poller.pending() == 0);
}

TEST_CASE("A batch past its deadline fails everything pending, naming the tensors", "[host][poller]") {
  CompletionPoller poller;
  auto stuck = std::make_shared<FakeWork>(), behind = std::make_shared<FakeWork>();
  auto resource = std::make_shared<int>(7);
  std::weak_ptr<int> resource_alive = resource;
  auto a = entry("grad.w", nullptr), b = entry("grad.b", nullptr);
  auto ha = a.handle, hb = b.handle;
  PendingBatch first = batch({a}, stuck, nullptr, 50ms);
  first.resources = std::move(resource);
  poller.submit(std::move(first));
  poller.submit(batch({b}, behind));
  const Status s = wait(ha);
  CHECK(s.code() == StatusCode::kTimeout);
  CHECK_THAT(s.message(), Catch::Contains("allreduce of grad.w did not finish within 0.05 s"));
  CHECK_THAT(s.message(), Catch::Contains("CHORUS_GPU_OP_TIMEOUT_SECONDS"));
  CHECK_THAT(s.message(), Catch::Contains("grad.b"));  // every pending operation is named
  CHECK(wait(hb).message() == s.message());
  CHECK(poller.fault().message() == s.message());
  // The stuck kernel may still use the batch's memory: held until it ends.
  CHECK_FALSE(resource_alive.expired());
  CHECK(poller.draining() == 2);
  stuck->state = 1;
  behind->state = 1;
  for (int i = 0; i < 500 && !resource_alive.expired(); ++i) std::this_thread::sleep_for(2ms);
  CHECK(resource_alive.expired());
  CHECK(poller.draining() == 0);
}

TEST_CASE("An asynchronous communicator error fails every pending batch, and later ones at once", "[host][poller]") {
  CompletionPoller poller;
  FakeErrors errors;
  auto w1 = std::make_shared<FakeWork>(), w2 = std::make_shared<FakeWork>();
  auto a = entry("x", nullptr), b = entry("y", nullptr);
  auto ha = a.handle, hb = b.handle;
  poller.submit(batch({a}, w1, &errors));
  poller.submit(batch({b}, w2, &errors));
  std::this_thread::sleep_for(20ms);
  CHECK_FALSE(ha->done());
  {
    std::lock_guard<std::mutex> lock(errors.mu);
    errors.error = Status::unknown_error("ncclCommGetAsyncError: remote process exited (ncclRemoteError)");
  }
  const Status s = wait(ha);
  CHECK_FALSE(s.is_ok());
  CHECK_THAT(s.message(), Catch::Contains("ncclRemoteError"));
  CHECK_THAT(s.message(), Catch::Contains("allreduce of x; allreduce of y"));
  CHECK(wait(hb).message() == s.message());
  CHECK(poller.fault().message() == s.message());

  auto late = entry("z", nullptr);
  auto hl = late.handle;
  auto w3 = std::make_shared<FakeWork>();
  poller.submit(batch({late}, w3, &errors));
  CHECK(hl->done());  // failed at submit: nothing waits on a broken communicator
  CHECK(hl->status().message() == s.message());
  w1->state = 1;
  w2->state = 1;
  w3->state = 1;
}

TEST_CASE("Work that failed on the device is a fault", "[host][poller]") {
  CompletionPoller poller;
  auto w = std::make_shared<FakeWork>();
  auto a = entry("t", nullptr);
  auto ha = a.handle;
  poller.submit(batch({a}, w));
  w->state = 2;
  const Status s = wait(ha);
  CHECK_THAT(s.message(), Catch::Contains("allreduce of t failed on the device"));
  CHECK_THAT(s.message(), Catch::Contains("illegal memory access"));
  CHECK_FALSE(poller.fault().is_ok());
}

TEST_CASE("fail_all fails what is pending with the given reason", "[host][poller]") {
  CompletionPoller poller;
  auto w = std::make_shared<FakeWork>();
  auto a = entry("p", nullptr);
  auto ha = a.handle;
  poller.submit(batch({a}, w));
  poller.fail_all(Status::aborted("rank 1 called shutdown()"));
  CHECK(wait(ha).message() == "rank 1 called shutdown()");
  CHECK(poller.fault().message() == "rank 1 called shutdown()");
  w->state = 1;
}

TEST_CASE("Shutdown with work pending waits, then fails it naming the tensors", "[host][poller]") {
  auto never = std::make_shared<FakeWork>(), finishes = std::make_shared<FakeWork>();
  auto resource = std::make_shared<int>(1);
  std::weak_ptr<int> resource_alive = resource;
  std::shared_ptr<HandleState> hs, hf;
  {
    CompletionPoller poller;
    poller.set_drain_wait(60ms);
    auto f = entry("finishes", nullptr), s = entry("stuck", nullptr);
    hf = f.handle;
    hs = s.handle;
    poller.submit(batch({f}, finishes));
    PendingBatch b = batch({s}, never);
    b.resources = std::move(resource);
    poller.submit(std::move(b));
    finishes->state = 1;
  }
  CHECK(hf->status().is_ok());
  REQUIRE(hs->done());
  CHECK(hs->status().code() == StatusCode::kAborted);
  CHECK_THAT(hs->status().message(), Catch::Contains("allreduce of stuck"));
  CHECK_FALSE(resource_alive.expired());  // leaked, never freed under a running kernel
}

TEST_CASE("An idle completion thread polls nothing", "[host][poller]") {
  CompletionPoller poller({std::chrono::microseconds(50), std::chrono::milliseconds(2)});
  FakeErrors errors;
  auto w = std::make_shared<FakeWork>();
  auto a = entry("i", nullptr);
  auto ha = a.handle;
  std::this_thread::sleep_for(20ms);
  CHECK(errors.polls.load() == 0);
  poller.submit(batch({a}, w, &errors));
  std::this_thread::sleep_for(100ms);
  // While work is pending the thread backs off to sleeps of max_sleep (2 ms):
  // a busy loop would poll hundreds of thousands of times.
  CHECK(w->polls.load() < 2000);
  CHECK(w->polls.load() > 10);
  w->state = 1;
  CHECK(wait(ha).is_ok());
  std::this_thread::sleep_for(10ms);
  const int after = errors.polls.load() + w->polls.load();
  std::this_thread::sleep_for(100ms);
  CHECK(errors.polls.load() + w->polls.load() == after);  // condition variable, no polling
}

TEST_CASE("A batch's description names at most a few tensors", "[host][poller]") {
  PendingBatch b;
  b.what = "broadcast";
  for (int i = 0; i < 10; ++i) b.entries.push_back(entry("t" + std::to_string(i), nullptr));
  CHECK(describe_batch(b, 3) == "broadcast of t0, t1, t2 and 7 more");
}

TEST_CASE("A grouped allreduce's members complete together on the completion thread", "[host][poller]") {
  CompletionPoller poller;
  auto group = std::make_shared<GroupCompletion>(2);
  Order order;
  auto a = entry("g.a", &order), b = entry("g.b", &order);
  a.group = b.group = group;
  auto ha = a.handle, hb = b.handle;
  auto w = std::make_shared<FakeWork>();
  poller.submit(batch({a, b}, w));
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  CHECK_FALSE(ha->done());
  w->state = 1;
  CHECK(wait(ha).is_ok());
  CHECK(wait(hb).is_ok());
  CHECK(order.get() == std::vector<std::string>{"g.a", "g.b"});
}

TEST_CASE("A batch whose communicator broke never completes OK, even when its event completed", "[host][poller]") {
  // An aborted communicator ends its kernels, so their done events complete:
  // the error source, not the event, says whether the peers' data arrived.
  CompletionPoller poller;
  FakeErrors errors;
  errors.error = Status::aborted("NCCL communicator chorus.0 was aborted");
  auto w = std::make_shared<FakeWork>();
  w->state = 1;  // already "done" when the poller first looks
  auto a = entry("grad.a", nullptr);
  auto ha = a.handle;
  poller.submit(batch({a}, w, &errors));
  const Status s = wait(ha);
  CHECK(s.code() == StatusCode::kUnknownError);
  CHECK_THAT(s.message(), Catch::Contains("was aborted"));
  CHECK_THAT(s.message(), Catch::Contains("grad.a"));
  CHECK(!poller.fault().is_ok());
}

TEST_CASE("A launch that failed part-way fails its tensors now and holds them until its event ends", "[host][poller]") {
  CompletionPoller poller;
  auto w = std::make_shared<FakeWork>();
  auto input = std::make_shared<int>(7);
  auto a = entry("grad.p", nullptr);
  auto ha = a.handle;
  PendingBatch b = batch({a}, w);
  b.resources = input;
  poller.submit_failed(std::move(b), Status::unknown_error("ncclAllReduce failed"));
  CHECK(wait(ha).code() == StatusCode::kUnknownError);
  CHECK(poller.draining() == 1);
  CHECK(input.use_count() > 1);  // queued work may still read it
  std::this_thread::sleep_for(20ms);
  CHECK(poller.draining() == 1);
  w->state = 1;
  for (int i = 0; i < 500 && poller.draining() > 0; ++i) std::this_thread::sleep_for(1ms);
  CHECK(poller.draining() == 0);
  CHECK(input.use_count() == 1);
  CHECK(poller.fault().is_ok());  // the launching thread reports its own failure
}

TEST_CASE("The first polls after a submit that follows an idle spell are spins, not sleeps", "[host][poller]") {
  // A frozen fake clock: if the submit did not restart the spin phase, the
  // time since the last progress (set 1 s back) would send the thread to sleep.
  std::mutex mu;
  auto now = std::chrono::steady_clock::time_point() + 1h;
  PollBackoff backoff{std::chrono::microseconds(50), std::chrono::milliseconds(1), [&] {
                        std::lock_guard<std::mutex> lock(mu);
                        return now;
                      }};
  CompletionPoller poller(backoff);
  std::this_thread::sleep_for(10ms);  // the thread is idle on its condition variable
  {
    std::lock_guard<std::mutex> lock(mu);
    now += 1s;
  }
  auto w = std::make_shared<FakeWork>();
  auto a = entry("small", nullptr);
  auto ha = a.handle;
  poller.submit(batch({a}, w));
  for (int i = 0; i < 1000 && w->polls.load() < 20; ++i) std::this_thread::sleep_for(1ms);
  CHECK(w->polls.load() >= 20);
  const PollWaits waits = poller.waits();
  CHECK(waits.sleeps == 0);
  CHECK(waits.spins >= 10);
  w->state = 1;
  CHECK(wait(ha).is_ok());
}
