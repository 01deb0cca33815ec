// The whole runtime (queue, negotiation, fusion, executor, shutdown) on
// in-process ranks. The same cases run under mpirun in test/mpi.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "chorus/error.h"
#include "loopback_job.h"
#include "tcp_job.h"

using namespace chorus;
using chorus::test::run_ranks;

namespace {

std::shared_ptr<HostTensorView> view(std::vector<float>& v) {
  return std::make_shared<HostTensorView>(v.data(), DataType::kFloat32,
                                          TensorShape{static_cast<int64_t>(v.size())});
}

template <class E>
std::string error_of(const Handle& h) {
  try {
    h.wait(std::chrono::seconds(20));
  } catch (const E& e) {
    return e.what();
  }
  throw std::runtime_error("expected the operation to fail");
}

}  // namespace

TEST_CASE("Allreduce sums, averages and scales across in-process ranks", "[runtime]") {
  for (int size : {1, 2, 3, 4}) {
    INFO("world size " << size);
    run_ranks(size, [size](Runtime& rt, int rank) {
      std::vector<float> in(17), out(17);
      for (int i = 0; i < 17; ++i) in[i] = float(rank * 100 + i);
      AllreduceOptions sum;
      sum.op = ReduceOp::kSum;
      rt.allreduce_async("sum", view(in), view(out), sum).wait();
      for (int i = 0; i < 17; ++i) {
        RANK_CHECK(out[i] == float(100 * size * (size - 1) / 2 + size * i));
      }
      AllreduceOptions avg;  // Average by default, with scale factors on top
      avg.prescale_factor = 2.0;
      avg.postscale_factor = 0.5;
      rt.allreduce_async("avg", view(in), view(in), avg).wait();  // in place
      for (int i = 0; i < 17; ++i) RANK_CHECK(in[i] == Approx(50.0 * (size - 1) + i));
    });
  }
}

TEST_CASE("Tensors enqueued together are fused into few data-plane calls", "[runtime][fusion]") {
  run_ranks(3, [](Runtime& rt, int rank) {
    const int n = 200;
    std::vector<std::vector<float>> bufs(n, std::vector<float>(64));
    std::vector<Handle> handles;
    AllreduceOptions sum;
    sum.op = ReduceOp::kSum;
    for (int t = 0; t < n; ++t) {
      std::fill(bufs[t].begin(), bufs[t].end(), float(t + rank));
      handles.push_back(rt.allreduce_async("t" + std::to_string(t), view(bufs[t]), view(bufs[t]), sum));
    }
    for (auto& h : handles) h.wait();
    for (int t = 0; t < n; ++t) RANK_CHECK(bufs[t][63] == float(3 * t + 3));
    const RuntimeStats st = rt.stats();
    RANK_CHECK(st.tensors_allreduced == n);
    RANK_CHECK(st.fused_allreduce_ops >= 1);
    RANK_CHECK(st.allreduce_ops < n / 2);  // fused, not one call per tensor
  });
}

TEST_CASE("A grouped allreduce completes together and fuses", "[runtime][group]") {
  run_ranks(2, [](Runtime& rt, int rank) {
    std::vector<std::vector<float>> bufs(5, std::vector<float>(8, float(rank + 1)));
    std::vector<std::string> names;
    std::vector<std::shared_ptr<Tensor>> tensors;
    for (int i = 0; i < 5; ++i) {
      names.push_back("g" + std::to_string(i));
      tensors.push_back(view(bufs[i]));
    }
    AllreduceOptions sum;
    sum.op = ReduceOp::kSum;
    auto handles = rt.grouped_allreduce_async(names, tensors, {}, sum);
    handles.back().wait();
    for (auto& h : handles) RANK_CHECK(h.poll());  // the last one done => all done
    for (auto& b : bufs) RANK_CHECK(b[7] == 3.0f);
    RANK_CHECK(rt.stats().allreduce_ops == 1);
  });
}

// A flat gradient buffer (the LibTorch adapter's layout) is reduced where it
// is; ranks that pack (other layouts) still agree element for element.
TEST_CASE("Fused tensors lying back to back in memory are reduced in place", "[runtime][fusion]") {
  for (int size : {1, 2, 3, 4}) {
    INFO("world size " << size);
    run_ranks(size, [size](Runtime& rt, int rank) {
      const std::vector<int64_t> lengths = {3, 1, 70, 5, 33};
      int64_t total = 0;
      for (int64_t n : lengths) total += n;
      // Rank 0: back to back in group order; rank 1: back to back in reverse
      // order (not contiguous in the response's order); others: separate.
      std::vector<float> flat(static_cast<size_t>(total));
      std::vector<std::vector<float>> separate(lengths.size());
      std::vector<float*> data(lengths.size());
      int64_t offset = 0;
      std::vector<int64_t> starts(lengths.size());
      if (rank == 1) {
        for (size_t i = lengths.size(); i-- > 0;) { starts[i] = offset; offset += lengths[i]; }
      } else {
        for (size_t i = 0; i < lengths.size(); ++i) { starts[i] = offset; offset += lengths[i]; }
      }
      for (size_t i = 0; i < lengths.size(); ++i) {
        separate[i].resize(static_cast<size_t>(lengths[i]));
        data[i] = rank <= 1 ? flat.data() + starts[i] : separate[i].data();
        for (int64_t j = 0; j < lengths[i]; ++j) data[i][j] = float(rank + 1) * float(i * 100 + j);
      }
      std::vector<std::string> names;
      std::vector<std::shared_ptr<Tensor>> tensors;
      for (size_t i = 0; i < lengths.size(); ++i) {
        names.push_back("flat" + std::to_string(i));
        tensors.push_back(std::make_shared<HostTensorView>(data[i], DataType::kFloat32, TensorShape{lengths[i]}));
      }
      AllreduceOptions avg;  // Average, with scale factors on both sides
      avg.prescale_factor = 2.0;
      avg.postscale_factor = 0.25;
      const RuntimeStats before = rt.stats();
      auto handles = rt.grouped_allreduce_async(names, tensors, {}, avg);
      for (auto& h : handles) h.wait();
      const double rank_sum = size * (size + 1) / 2.0;
      for (size_t i = 0; i < lengths.size(); ++i) {
        for (int64_t j = 0; j < lengths[i]; ++j) {
          RANK_CHECK(data[i][j] == Approx(rank_sum * double(i * 100 + j) * 2.0 * 0.25 / size));
        }
      }
      const RuntimeStats after = rt.stats();
      RANK_CHECK(after.fused_allreduce_ops - before.fused_allreduce_ops == 1);
      RANK_CHECK(after.in_place_fused_allreduce_ops - before.in_place_fused_allreduce_ops == (rank == 0 ? 1 : 0));
    });
  }
}

TEST_CASE("Tensors from allocate_shared_host are reduced where they lie, on every rank or not at all",
          "[runtime][arena]") {
  for (int size : {2, 3}) {
    for (bool rank0_on_heap : {false, true}) {
      INFO("size " << size << ", rank 0 on the heap " << rank0_on_heap);
      run_ranks(size, [&](Runtime& rt, int rank) {
        const bool arena = !(rank0_on_heap && rank == 0);
        const std::vector<int64_t> lengths{1000, 7, 33333};
        std::vector<std::shared_ptr<void>> memory;
        std::vector<std::string> names;
        std::vector<std::shared_ptr<Tensor>> tensors;
        std::vector<float> heap(40000);
        int64_t at = 0;
        for (size_t i = 0; i < lengths.size(); ++i) {
          float* data = heap.data() + at;
          at += lengths[i];
          if (arena) {
            memory.push_back(rt.allocate_shared_host(lengths[i] * 4));
            data = static_cast<float*>(memory.back().get());
            RANK_CHECK(rt.in_shared_host(data, lengths[i] * 4));
          }
          for (int64_t j = 0; j < lengths[i]; ++j) data[j] = float(rank + 1) * float(i * 100 + j % 1000);
          names.push_back("arena" + std::to_string(i));
          tensors.push_back(std::make_shared<HostTensorView>(data, DataType::kFloat32, TensorShape{lengths[i]}));
        }
        RANK_CHECK(!rt.in_shared_host(heap.data(), 4));
        AllreduceOptions avg;  // Average, with scale factors on both sides
        avg.prescale_factor = 2.0;
        avg.postscale_factor = 0.25;
        const detail::InternalStats before = detail::RuntimeAccess::stats(rt);
        for (auto& h : rt.grouped_allreduce_async(names, tensors, {}, avg)) h.wait();
        const double rank_sum = size * (size + 1) / 2.0;
        for (size_t i = 0; i < lengths.size(); ++i) {
          const auto* data = static_cast<const float*>(tensors[i]->data());
          for (int64_t j = 0; j < lengths[i]; ++j) {
            RANK_CHECK(data[j] == Approx(rank_sum * double(i * 100 + j % 1000) * 2.0 * 0.25 / size));
          }
        }
        const detail::InternalStats after = detail::RuntimeAccess::stats(rt);
        RANK_CHECK(after.shm_zero_copy_ops - before.shm_zero_copy_ops == (rank0_on_heap ? 0 : 1));
        RANK_CHECK(after.shm_allreduce_ops - before.shm_allreduce_ops == 1);
      });
    }
  }
  run_ranks(1, [&](Runtime& rt, int) {
    bool refused = false;
    try {
      rt.allocate_shared_host(-1);
    } catch (const InvalidArgumentError& e) {
      refused = std::string(e.what()).find("allocate_shared_host: -1 bytes") != std::string::npos;
    }
    RANK_CHECK(refused);
    RANK_CHECK(rt.allocate_shared_host(0) != nullptr);
  });
}

TEST_CASE("Broadcast copies the root's tensor to every rank", "[runtime]") {
  run_ranks(3, [](Runtime& rt, int rank) {
    for (int root = 0; root < 3; ++root) {
      std::vector<float> v(10, float(rank));
      rt.broadcast_async("b" + std::to_string(root), view(v), root).wait();
      for (float x : v) RANK_CHECK(x == float(root));
    }
  });
}

TEST_CASE("A mismatch fails on every rank with a message naming tensor and ranks", "[runtime][errors]") {
  run_ranks(3, [](Runtime& rt, int rank) {
    std::vector<float> v(rank == 2 ? 5 : 4, 1.0f);
    std::string m = error_of<InvalidArgumentError>(rt.allreduce_async("bad", view(v), view(v)));
    RANK_CHECK(m.find("'bad'") != std::string::npos);
    RANK_CHECK(m.find("[4] on ranks 0, 1; [5] on rank 2") != std::string::npos);
    // The runtime goes on working after an error.
    std::vector<float> ok(4, 1.0f);
    rt.allreduce_async("good", view(ok), view(ok)).wait();
    RANK_CHECK(ok[0] == 1.0f);
  });
}

TEST_CASE("Local bad input fails at the wait, as this rank's refusal", "[runtime][errors]") {
  run_ranks(1, [](Runtime& rt, int) {
    std::vector<float> a(4), b(5);
    bool threw = false;
    try {
      rt.allreduce_async("x", view(a), view(b)).wait();
    } catch (const InvalidArgumentError& e) {
      threw = std::string(e.what()).find("allreduce of tensor 'x' refused on rank 0: input has shape [4]") !=
              std::string::npos;
    }
    RANK_CHECK(threw);
    std::vector<uint8_t> flags(3);
    auto flag_view = std::make_shared<HostTensorView>(flags.data(), DataType::kBool, TensorShape{3});
    AllreduceOptions sum;
    sum.op = ReduceOp::kSum;
    threw = false;
    try {
      rt.allreduce_async("flags", flag_view, flag_view, sum).wait();
    } catch (const InvalidArgumentError&) {
      threw = true;
    }
    RANK_CHECK(threw);
    threw = false;
    try {
      rt.broadcast_async("root", view(a), 3).wait();  // negotiated: fails at the wait
    } catch (const InvalidArgumentError& e) {
      threw = std::string(e.what()).find("root rank 3") != std::string::npos;
    }
    RANK_CHECK(threw);
    // A device that is neither the CPU nor a CUDA index: refused, naming
    // the tensor and the device (CUDA tensors: test_device_tensors.cc).
    struct OnDevice : Tensor {
      explicit OnDevice(std::vector<float>& v) : v_(v) {}
      DataType dtype() const override { return DataType::kFloat32; }
      TensorShape shape() const override { return TensorShape{static_cast<int64_t>(v_.size())}; }
      const void* data() const override { return v_.data(); }
      void* mutable_data() override { return v_.data(); }
      int64_t size_bytes() const override { return static_cast<int64_t>(v_.size() * sizeof(float)); }
      int device() const override { return -2; }
      std::vector<float>& v_;
    };
    auto on_device = std::make_shared<OnDevice>(a);
    for (int op = 0; op < 2; ++op) {
      threw = false;
      try {
        if (op == 0) rt.allreduce_async("gpu", on_device, on_device).wait();
        if (op == 1) rt.broadcast_async("gpu", on_device, 0).wait();
      } catch (const InvalidArgumentError& e) {
        const std::string m = e.what();
        threw = m.find("'gpu'") != std::string::npos && m.find("device -2") != std::string::npos;
      }
      RANK_CHECK(threw);
    }
  });
}

TEST_CASE("A duplicate in-flight name is refused on that rank", "[runtime][errors]") {
  // Rank 1 submits only after rank 0 tried the duplicate, so the first
  // "dup" is surely still in flight then.
  std::atomic<bool> tried{false};
  run_ranks(2, [&tried](Runtime& rt, int rank) {
    std::vector<float> a(4, 1), b(4, 1);
    if (rank == 0) {
      Handle first = rt.allreduce_async("dup", view(a), view(a));
      bool threw = false;
      try {
        rt.allreduce_async("dup", view(b), view(b));
      } catch (const InvalidArgumentError& e) {
        threw = std::string(e.what()).find("already in flight") != std::string::npos;
      }
      RANK_CHECK(threw);
      tried = true;
      first.wait();
    } else {
      while (!tried) std::this_thread::yield();
      rt.allreduce_async("dup", view(a), view(a)).wait();
    }
  });
}

TEST_CASE("One rank shutting down fails the others' pending work instead of hanging", "[runtime][shutdown]") {
  run_ranks(3, [](Runtime& rt, int rank) {
    std::vector<float> v(4, 1);
    if (rank == 1) {
      rt.shutdown();
      RANK_CHECK(!rt.is_running());
      bool threw = false;
      try {
        rt.allreduce_async("after", view(v), view(v));
      } catch (const AbortedError&) {
        threw = true;
      }
      RANK_CHECK(threw);
      return;
    }
    // The shutdown reaches this rank before or after it enqueues: either the
    // enqueue or the wait fails, naming the tensor and the reason.
    std::string m;
    try {
      m = error_of<AbortedError>(rt.allreduce_async("never", view(v), view(v)));
    } catch (const AbortedError& e) {
      m = e.what();
    }
    RANK_CHECK(m.find("'never'") != std::string::npos);
    RANK_CHECK(m.find("rank 1 called shutdown()") != std::string::npos);
  });
}

namespace {

// Rank 1's view of the control channel when the response lists reach it
// unreadable (a build of another protocol version, or bytes spoiled on the
// way): their first byte is changed. The backend's channel exists from its
// start() on (TCP), so each call asks for it.
class SpoilingChannel final : public detail::ControlChannel {
 public:
  explicit SpoilingChannel(detail::Backend& inner) : inner_(inner) {}
  Status send_to_coordinator(std::string bytes) override {
    return inner_.control().send_to_coordinator(std::move(bytes));
  }
  bool poll_from_workers(int* from, std::string* bytes) override {
    return inner_.control().poll_from_workers(from, bytes);
  }
  Status send_to_workers(const std::string& bytes) override { return inner_.control().send_to_workers(bytes); }
  bool poll_from_coordinator(std::string* bytes) override {
    if (!inner_.control().poll_from_coordinator(bytes)) return false;
    if (!bytes->empty()) (*bytes)[0] = static_cast<char>((*bytes)[0] ^ 0x5a);
    return true;
  }
  bool close(std::chrono::milliseconds bound) override { return inner_.control().close(bound); }
  std::vector<int> not_at_close() const override { return inner_.control().not_at_close(); }
  Status failure() const override { return inner_.control().failure(); }

 private:
  detail::Backend& inner_;
};

class SpoiledListsBackend final : public detail::Backend {
 public:
  explicit SpoiledListsBackend(std::unique_ptr<detail::Backend> inner) : inner_(std::move(inner)), channel_(*inner_) {}
  Status start() override { return inner_->start(); }
  void stop() override { inner_->stop(); }
  detail::Topology topology() const override { return inner_->topology(); }
  detail::ControlChannel& control() override { return channel_; }
  detail::Communicator& collectives() override { return inner_->collectives(); }
  detail::PeerLink& peer_link() override { return inner_->peer_link(); }
  const detail::SharedSlots* shared_slots() const override { return inner_->shared_slots(); }
  std::shared_ptr<detail::SharedArena> shared_arena() const override { return inner_->shared_arena(); }
  Status split(int32_t id, const std::vector<int>& members, std::unique_ptr<detail::Backend>* out) override {
    return inner_->split(id, members, out);
  }
  void end_job(int exit_code) override { inner_->end_job(exit_code); }

 private:
  std::unique_ptr<detail::Backend> inner_;
  SpoilingChannel channel_;
};

struct Outcome {
  std::string message;
  double seconds = 0;
};

// Ranks 0 and 2 wait for rank 1 in "x", rank 1 for the others in "y": how
// this rank's handle failed, and when.
Outcome wait_for_the_failure(Runtime& rt, int rank) {
  std::vector<float> v(4, 1);
  const auto start = std::chrono::steady_clock::now();
  Handle h = rt.allreduce_async(rank == 1 ? "y" : "x", view(v), view(v));
  Outcome o;
  o.message = error_of<AbortedError>(h);
  o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return o;
}

}  // namespace

TEST_CASE("A worker that cannot read rank 0's response lists fails every rank's work, naming it", "[runtime][errors]") {
  RuntimeOptions o = chorus::test::quiet_options();
  o.log_level = LogLevel::kFatal;  // rank 0's stall warnings are expected here
  // While tensors wait rank 0 sends a heartbeat every 0.5 s: the first list
  // rank 1 gets. (A list holding a collective would leave ranks 0 and 2
  // inside it; see docs/troubleshooting.md.)
  o.stall_check_seconds = 1;
  auto spoiled_on_rank_1 = [](std::unique_ptr<detail::Backend> backend, int rank) {
    return rank == 1 ? std::make_unique<SpoiledListsBackend>(std::move(backend)) : std::move(backend);
  };
  std::vector<Outcome> outcomes(3);
  SECTION("in-process ranks") {
    auto world = detail::make_loopback_world(3);
    std::vector<std::unique_ptr<Runtime>> runtimes;
    for (int r = 0; r < 3; ++r) {
      runtimes.push_back(detail::RuntimeAccess::make(spoiled_on_rank_1(detail::make_loopback_backend(world, r), r), o));
    }
    chorus::test::on_thread_ranks_rethrowing(3, [&](int r) {
      outcomes[static_cast<size_t>(r)] = wait_for_the_failure(*runtimes[static_cast<size_t>(r)], r);
    });
    runtimes.clear();
    REQUIRE(detail::loopback_exit_code(world) == -1);  // every rank got to the close: nothing had to end the job
  }
  SECTION("over TCP") {  // a close that did not come in 5 s would end this process (exit code 76)
    const int port = chorus::test::free_tcp_port();
    chorus::test::on_thread_ranks_rethrowing(3, [&](int r) {
      auto backend = detail::make_tcp_backend(o, chorus::test::tcp_meeting(r, 3, port));
      std::unique_ptr<Runtime> rt = detail::RuntimeAccess::make(spoiled_on_rank_1(std::move(backend), r), o);
      outcomes[static_cast<size_t>(r)] = wait_for_the_failure(*rt, r);
    });
  }
  for (size_t r = 0; r < 3; ++r) {
    INFO("rank " << r << " after " << outcomes[r].seconds << " s: " << outcomes[r].message);
    CHECK_THAT(outcomes[r].message,
               Catch::Contains("did not complete: Chorus was shut down (rank 1: could not read the response list "
                               "rank 0 sent (malformed response list (bad header); are all ranks running the same "
                               "Chorus build?))"));
    CHECK(outcomes[r].seconds < 5);
  }
}

TEST_CASE("Wait with a timeout gives up without losing the operation", "[runtime]") {
  run_ranks(2, [](Runtime& rt, int rank) {
    std::vector<float> v(4, 1);
    if (rank == 0) {
      Handle h = rt.allreduce_async("slow", view(v), view(v));
      bool timed_out = false;
      try {
        h.wait(std::chrono::milliseconds(50));
      } catch (const TimeoutError&) {
        timed_out = true;
      }
      RANK_CHECK(timed_out);
      rt.broadcast_async("go", view(v), 0).wait();  // lets rank 1 proceed
      h.wait();
      RANK_CHECK(v[0] == 1.0f);
    } else {
      std::vector<float> w(4, 1);
      rt.broadcast_async("go", view(w), 0).wait();
      rt.allreduce_async("slow", view(v), view(v)).wait();
    }
  });
}

namespace {

// Rank 0 submits `name` (after `warm_up` rounds on both ranks, which cache
// it), rank 1 never does: the stall shutdown must fail it naming rank 1.
void expect_stall_shutdown(const std::string& name, int warm_up) {
  RuntimeOptions o = chorus::test::quiet_options();
  o.log_level = LogLevel::kFatal;  // the stall warning is expected here
  o.stall_check_seconds = 0.2;
  o.stall_shutdown_seconds = 0.2;
  run_ranks(2, [&](Runtime& rt, int rank) {
    std::vector<float> v(4, 1);
    for (int i = 0; i < warm_up; ++i) rt.allreduce_async(name, view(v), view(v)).wait();
    if (rank != 0) {
      // Rank 1 does not submit; it just waits for the runtime to stop.
      for (int i = 0; i < 200 && rt.is_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      RANK_CHECK(!rt.is_running());
      return;
    }
    std::string m = error_of<AbortedError>(rt.allreduce_async(name, view(v), view(v)));
    RANK_CHECK(m.find("'" + name + "'") != std::string::npos);
    RANK_CHECK(m.find("missing on ranks 1") != std::string::npos);
  }, o);
}

}  // namespace

TEST_CASE("A stall shutdown fails stalled tensors naming the missing ranks", "[runtime][stall]") {
  expect_stall_shutdown("lonely", 0);
}

TEST_CASE("A stall of a cached name (negotiated by cache bits) names it and the missing rank", "[runtime][cache][stall]") {
  expect_stall_shutdown("cached.lonely", 3);
}

TEST_CASE("The fixed-cycle mode gives the same results", "[runtime]") {
  RuntimeOptions o = chorus::test::quiet_options();
  o.wake_on_enqueue = false;
  run_ranks(2, [](Runtime& rt, int rank) {
    std::vector<float> v(4, float(rank));
    AllreduceOptions sum;
    sum.op = ReduceOp::kSum;
    rt.allreduce_async("x", view(v), view(v), sum).wait();
    RANK_CHECK(v[3] == 1.0f);
  }, o);
}

namespace {

int64_t last_resends = 0;  // stale cache bits resent in full in the last cache_rounds()

// Rounds of allreduces over a fixed set of names with a shape that may change
// per round, in an order that changes per round (and per rank, when
// `order_per_rank`; `names` must not be a multiple of 7); returns rank 1's cache hits. Values are checked every
// round.
int64_t cache_rounds(int64_t capacity, int names, int rounds, bool change_shape_midway, bool order_per_rank = false) {
  RuntimeOptions options = chorus::test::quiet_options();
  options.cache_capacity = capacity;
  std::atomic<int64_t> hits{0}, resends{0};
  run_ranks(3, [&](Runtime& rt, int rank) {
    for (int round = 0; round < rounds; ++round) {
      const int64_t n = change_shape_midway && round >= rounds / 2 ? 5 : 7;
      std::vector<std::vector<float>> bufs(names, std::vector<float>(n));
      std::vector<Handle> handles;
      AllreduceOptions sum;
      sum.op = ReduceOp::kSum;
      auto name_of = [&](int t) { return (t * 7 + round + (order_per_rank ? rank * 3 : 0)) % names; };
      for (int t = 0; t < names; ++t) {
        std::fill(bufs[t].begin(), bufs[t].end(), float(rank + name_of(t) + round));
        handles.push_back(rt.allreduce_async("c" + std::to_string(name_of(t)), view(bufs[t]), view(bufs[t]), sum));
        // A slow rank: the others' tensors complete one by one as its arrive.
        if (order_per_rank && rank == 1) std::this_thread::sleep_for(std::chrono::microseconds(300));
      }
      for (auto& h : handles) h.wait(std::chrono::seconds(20));
      for (int t = 0; t < names; ++t) RANK_CHECK(bufs[t][n - 1] == float(3 + 3 * (name_of(t) + round)));
    }
    if (rank == 1) hits = rt.stats().cache_hits;
    resends += rt.stats().cache_resends;
  }, options);
  last_resends = resends;
  return hits;
}

}  // namespace

TEST_CASE("Response cache on and off give identical results; hits in steady state", "[runtime][cache]") {
  REQUIRE(cache_rounds(0, 20, 6, false) == 0);
  REQUIRE(cache_rounds(1024, 20, 6, false) > 0);
}

TEST_CASE("A shape change on every rank refills the cache; eviction under a small capacity", "[runtime][cache]") {
  REQUIRE(cache_rounds(1024, 10, 8, true) > 0);
  // Capacity 3 for 10 names: constant eviction, stale keys resent, results still right.
  int64_t resends = 0;
  cache_rounds(3, 10, 12, false);
  resends += last_resends;
  cache_rounds(1, 4, 20, true);
  resends += last_resends;
  WARN("stale cache bits resent under eviction: " << resends);
}

TEST_CASE("Ranks enqueuing cached names in different orders, with slots refilled while partly set", "[runtime][cache]") {
  // 9 names for 4 slots, each rank in its own order: slots are evicted while
  // some ranks' bits for them are counted and others' are on the way.
  cache_rounds(4, 9, 16, false, true);
  cache_rounds(4, 9, 16, true, true);
  REQUIRE(cache_rounds(1024, 12, 6, false, true) > 0);
}

TEST_CASE("A rank that joins while others' cache bits are counted: they complete with its zeros", "[runtime][cache][join]") {
  run_ranks(3, [](Runtime& rt, int rank) {
    AllreduceOptions sum;
    sum.op = ReduceOp::kSum;
    auto step = [&](int active) {
      std::vector<float> a(5, 1.0f), b(3, 2.0f);
      Handle ha = rt.allreduce_async("joined.a", view(a), view(a), sum);
      Handle hb = rt.allreduce_async("joined.b", view(b), view(b), sum);
      ha.wait(std::chrono::seconds(20));
      hb.wait(std::chrono::seconds(20));
      RANK_CHECK(a[4] == float(active));
      RANK_CHECK(b[2] == float(2 * active));
    };
    for (int i = 0; i < 3; ++i) step(3);  // cached now
    if (rank == 2) {
      // Joins late: ranks 0 and 1 have set their bits by then, most likely.
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    } else {
      for (int i = 0; i < 3; ++i) step(2);
    }
    Handle joined = rt.join_async();
    joined.wait(std::chrono::seconds(20));
    RANK_CHECK(joined.last_joined_rank() == 0 || joined.last_joined_rank() == 1);  // rank 2 joined first
  });
}

TEST_CASE("A cached name that comes back with another shape on one rank fails everywhere, then works", "[runtime][cache]") {
  RuntimeOptions options = chorus::test::quiet_options();
  run_ranks(3, [](Runtime& rt, int rank) {
    std::vector<float> v(6, 1.0f);
    AllreduceOptions sum;
    sum.op = ReduceOp::kSum;
    for (int i = 0; i < 3; ++i) rt.allreduce_async("cached.x", view(v), view(v), sum).wait();  // cached now
    std::vector<float> w(rank == 2 ? 4 : 6, 1.0f);
    const std::string m = error_of<InvalidArgumentError>(rt.allreduce_async("cached.x", view(w), view(w), sum));
    RANK_CHECK(m.find("shape differs") != std::string::npos);
    std::vector<float> again(6, 2.0f);
    rt.allreduce_async("cached.x", view(again), view(again), sum).wait();
    RANK_CHECK(again[5] == 6.0f);
  }, options);
}

TEST_CASE("A burst arriving over time fuses; a lone tensor is not held back", "[runtime][fusion]") {
  RuntimeOptions options = chorus::test::quiet_options();
  options.fusion_wait_us = 300000;  // 300 ms: far longer than the burst below
  run_ranks(2, [](Runtime& rt, int rank) {
    // Lone tensor: nothing else is arriving, so it must not wait 300 ms.
    std::vector<float> one(4, 1.0f);
    const auto t0 = std::chrono::steady_clock::now();
    rt.allreduce_async("lone", view(one), view(one)).wait();
    RANK_CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(150));

    // A burst: 12 tensors, 2 ms apart on rank 1 only, so the coordinator
    // always has some tensor half-submitted until the last one.
    const RuntimeStats before = rt.stats();
    std::vector<std::vector<float>> bufs(12, std::vector<float>(16, float(rank)));
    std::vector<Handle> hs;
    for (int t = 0; t < 12; ++t) {
      if (rank == 1) std::this_thread::sleep_for(std::chrono::milliseconds(2));
      hs.push_back(rt.allreduce_async("burst." + std::to_string(t), view(bufs[t]), view(bufs[t])));
    }
    for (auto& h : hs) h.wait();
    const RuntimeStats after = rt.stats();
    RANK_CHECK(after.allreduce_ops - before.allreduce_ops <= 2);
    RANK_CHECK(bufs[11][0] == 0.5f);
  }, options);
}

TEST_CASE("Allgather with a different first dimension per rank, and barrier, on in-process ranks", "[runtime][allgather]") {
  for (int size : {1, 2, 3, 4}) {
    INFO("world size " << size);
    run_ranks(size, [size](Runtime& rt, int rank) {
      std::vector<int32_t> in(static_cast<size_t>(rank * 2), rank);  // rank 0 contributes no rows
      auto t = std::make_shared<HostTensorView>(in.data(), DataType::kInt32, TensorShape{rank, 2});
      Handle h = rt.allgather_async("g", t);
      h.wait();
      auto out = h.output();
      RANK_CHECK(out != nullptr);
      RANK_CHECK(out->shape() == TensorShape({int64_t(size * (size - 1) / 2), 2}));
      const int32_t* v = static_cast<const int32_t*>(out->data());
      int64_t at = 0;
      for (int r = 0; r < size; ++r) {
        for (int i = 0; i < 2 * r; ++i) RANK_CHECK(v[at++] == r);
      }
      rt.barrier_async().wait();
      rt.barrier_async().wait();
      RANK_CHECK(rt.stats().allgathers == 1);
    });
  }
}
