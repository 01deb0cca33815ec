// CUDA tensors without a GPU: negotiation of device kinds across in-process
// ranks, and the staged path end to end over fake device memory
// (fake_device_memory.h), whose copies run only when their marks are polled.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <numeric>
#include <regex>
#include <sstream>
#include <thread>

#include "chorus/error.h"
#include "fake_device_memory.h"
#include "fusion/fusion_planner.h"
#include "device/device_timeline.h"
#include "device/staged_device_operations.h"
#include "engine/shared_stats.h"
#include "loopback_job.h"
#include "stderr_capture.h"

using namespace chorus;
using namespace chorus::detail;
using chorus::test::FakeDeviceContext;
using chorus::test::FakeDeviceMemory;
using chorus::test::FakeDeviceTensor;
using chorus::test::FakeGate;
using chorus::test::FakeProducer;

namespace {

// A backend whose split-off children fail to start (`fail_children`), or
// one such child (`fail_start`); everything else goes to `inner`.
class SplitStartFails final : public Backend {
 public:
  SplitStartFails(std::unique_ptr<Backend> inner, bool fail_children, bool fail_start)
      : inner_(std::move(inner)), fail_children_(fail_children), fail_start_(fail_start) {}
  Status start() override { return fail_start_ ? Status::unknown_error("planted start failure") : inner_->start(); }
  void stop() override { inner_->stop(); }
  Topology topology() const override { return inner_->topology(); }
  ControlChannel& control() override { return inner_->control(); }
  Communicator& collectives() override { return inner_->collectives(); }
  PeerLink& peer_link() override { return inner_->peer_link(); }
  const SharedSlots* shared_slots() const override { return inner_->shared_slots(); }
  std::shared_ptr<SharedArena> shared_arena() const override { return inner_->shared_arena(); }
  Status split(int32_t set_id, const std::vector<int>& members, std::unique_ptr<Backend>* out) override {
    const Status s = inner_->split(set_id, members, out);
    if (s.is_ok() && *out && fail_children_) *out = std::make_unique<SplitStartFails>(std::move(*out), false, true);
    return s;
  }
  void end_job(int exit_code) override { inner_->end_job(exit_code); }

 private:
  std::unique_ptr<Backend> inner_;
  const bool fail_children_, fail_start_;
};

// run_ranks with each rank's own fake device memory (nullptr support: a
// build without GPU support); on `split_fails_on` the backends it splits off
// fail to start.
template <class Body>
void run_device_ranks(int size, Body body, RuntimeOptions options = chorus::test::quiet_options(),
                      bool gpu_support = true, int split_fails_on = -1) {
  auto world = make_loopback_world(size, 0);
  std::vector<std::shared_ptr<FakeDeviceMemory>> memories;
  std::vector<std::unique_ptr<Runtime>> runtimes;
  for (int r = 0; r < size; ++r) {
    memories.push_back(std::make_shared<FakeDeviceMemory>());
    auto support = std::make_shared<DeviceSupport>();
    if (gpu_support) support->memory = memories.back();
    support->make_staged = make_staged_device_operations;
    std::unique_ptr<Backend> backend = make_loopback_backend(world, r);
    if (r == split_fails_on) backend = std::make_unique<SplitStartFails>(std::move(backend), true, false);
    runtimes.push_back(RuntimeAccess::make(std::move(backend), options, support));
  }
  std::exception_ptr failure;
  try {
    chorus::test::on_thread_ranks_rethrowing(size, [&](int r) {
      body(*runtimes[static_cast<size_t>(r)], r, *memories[static_cast<size_t>(r)]);
    });
  } catch (...) {
    failure = std::current_exception();
  }
  runtimes.clear();
  if (failure) std::rethrow_exception(failure);
}

std::shared_ptr<FakeDeviceTensor> device_floats(std::vector<float> values, int device, FakeProducer* producer = nullptr) {
  auto t = std::make_shared<FakeDeviceTensor>(DataType::kFloat32, TensorShape{static_cast<int64_t>(values.size())},
                                              device, producer);
  std::copy(values.begin(), values.end(), t->as<float>());
  return t;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

#define RANK_CHECK_OK(status)                                                          \
  do {                                                                                 \
    const Status _s = (status);                                                        \
    if (!_s.is_ok()) throw std::runtime_error(std::string(#status) + ": " + _s.message()); \
  } while (0)

}  // namespace

TEST_CASE("A CPU tensor and a CUDA tensor under one name: an error naming both sets of ranks", "[device]") {
  run_device_ranks(3, [](Runtime& rt, int rank, FakeDeviceMemory&) {
    std::vector<float> host(4, 1.0f);
    std::shared_ptr<Tensor> t = rank == 1 ? std::shared_ptr<Tensor>(device_floats({1, 1, 1, 1}, 0))
                                          : std::make_shared<HostTensorView>(host.data(), DataType::kFloat32,
                                                                             TensorShape{4});
    const Status s = rt.allreduce_async("w", t, t).wait_status();
    RANK_CHECK(!s.is_ok());
    RANK_CHECK(contains(s.message(), "tensor 'w'"));
    RANK_CHECK(contains(s.message(), "device differs: CPU on ranks 0, 2; CUDA on rank 1"));
  });
}

TEST_CASE("A CUDA tensor in a build without GPU support is refused, failing every rank and naming it", "[device]") {
  // Rank 1 alone passes a CUDA tensor: its refusal is negotiated, so the
  // ranks with CPU tensors fail too instead of waiting for it.
  run_device_ranks(
      3,
      [](Runtime& rt, int rank, FakeDeviceMemory& memory) {
        std::vector<float> host(2, 1.0f);
        std::shared_ptr<Tensor> t = rank == 1 ? std::shared_ptr<Tensor>(device_floats({1, 2}, 0))
                                              : std::make_shared<HostTensorView>(host.data(), DataType::kFloat32,
                                                                                 TensorShape{2});
        try {
          rt.allreduce_async("grad.w", t, t).wait();
          throw std::runtime_error("a CUDA tensor was accepted without GPU support");
        } catch (const InvalidArgumentError& e) {
          RANK_CHECK(contains(e.what(), "allreduce of tensor 'grad.w' refused on rank 1: the tensor is on CUDA device 0"));
          RANK_CHECK(contains(e.what(), "no GPU support"));
        }
        RANK_CHECK(memory.records == 0);
        auto on_host = std::make_shared<HostTensorView>(host.data(), DataType::kFloat32, TensorShape{2});
        AllreduceOptions sum;
        sum.op = ReduceOp::kSum;
        rt.allreduce_async("grad.w", on_host, on_host, sum).wait();  // the name is free again
        RANK_CHECK(host[0] == 3.0f);
      },
      chorus::test::quiet_options(), false);
}

TEST_CASE("Outputs sized by the negotiation need an OpContext on the device", "[device]") {
  run_device_ranks(1, [](Runtime& rt, int, FakeDeviceMemory&) {
    try {
      rt.allgather_async("g", device_floats({1, 2}, 0)).wait();
      throw std::runtime_error("an allgather of a CUDA tensor without an OpContext was accepted");
    } catch (const InvalidArgumentError& e) {
      RANK_CHECK(contains(e.what(), "allgather of tensor 'g'") && contains(e.what(), "OpHooks::context"));
    }
  });
}

TEST_CASE("A grouped allreduce is on one kind of device", "[device]") {
  run_device_ranks(1, [](Runtime& rt, int, FakeDeviceMemory&) {
    std::vector<float> host(2, 1.0f);
    auto cpu = std::make_shared<HostTensorView>(host.data(), DataType::kFloat32, TensorShape{2});
    try {
      for (const Handle& h : rt.grouped_allreduce_async({"a", "b"}, {cpu, device_floats({1, 2}, 0)}, {})) h.wait();
      throw std::runtime_error("a group of CPU and CUDA tensors was accepted");
    } catch (const InvalidArgumentError& e) {
      RANK_CHECK(contains(e.what(), "tensor 'b' is on CUDA but 'a' on CPU"));
    }
  });
}

TEST_CASE("CPU and CUDA allreduces never fuse, by names or by cache slots", "[device][fusion]") {
  auto ready = [](const std::string& name, DeviceKind kind) {
    ReadyTensor t;
    t.request.name = name;
    t.request.shape = {4};
    t.request.device_kind = kind;
    t.request.device = kind == DeviceKind::kCpu ? kCpuDevice : 0;
    t.response.names = {name};
    t.response.total_bytes = 16;
    t.response.device_kind = kind;
    return t;
  };
  const std::vector<Response> plan = plan_fusion(
      {ready("a", DeviceKind::kCpu), ready("b", DeviceKind::kCuda), ready("c", DeviceKind::kCpu),
       ready("d", DeviceKind::kCuda)},
      1 << 20);
  REQUIRE(plan.size() == 2);
  CHECK(plan[0].names == std::vector<std::string>{"a", "c"});
  CHECK(plan[0].device_kind == DeviceKind::kCpu);
  CHECK(plan[1].names == std::vector<std::string>{"b", "d"});
  CHECK(plan[1].device_kind == DeviceKind::kCuda);

  ResponseCache cache(8);
  Request on_gpu = ready("g", DeviceKind::kCuda).request, on_cpu = ready("h", DeviceKind::kCpu).request;
  cache.put(on_gpu);
  cache.put(on_cpu);
  const std::vector<Response> slots = plan_fusion({0, 1}, cache, 1 << 20);
  REQUIRE(slots.size() == 2);
  CHECK(slots[0].device_kind == DeviceKind::kCuda);
  CHECK(slots[1].device_kind == DeviceKind::kCpu);
  // The signature holds the kind: a slot whose kind changes is another tensor.
  Request moved = on_gpu;
  moved.device_kind = DeviceKind::kCpu;
  moved.device = kCpuDevice;
  CHECK_FALSE(same_signature(on_gpu, moved));
  Request other_gpu = on_gpu;
  other_gpu.device = 3;  // ranks sit on different GPUs: the index is each rank's own
  CHECK(same_signature(on_gpu, other_gpu));
}

TEST_CASE("Staged allreduce: fused, in place and out of place, ranks on different GPUs", "[device][staged]") {
  run_device_ranks(3, [](Runtime& rt, int rank, FakeDeviceMemory&) {
    const int gpu = rank;  // each rank on its own GPU: the kind is agreed, not the index
    for (int step = 0; step < 3; ++step) {
      auto a = device_floats({1.0f * rank, 2, 3, 4, 5}, gpu);
      std::vector<float> seventeen(17);
      std::iota(seventeen.begin(), seventeen.end(), static_cast<float>(rank));
      auto b = device_floats(seventeen, gpu);
      auto b_out = device_floats(std::vector<float>(17, -1.0f), gpu);
      auto c = device_floats({static_cast<float>(rank * 10)}, gpu);
      AllreduceOptions sum;
      sum.op = ReduceOp::kSum;
      std::vector<Handle> handles = rt.grouped_allreduce_async({"a", "b", "c"}, {a, b, c}, {a, b_out, c}, sum);
      for (Handle& h : handles) h.wait();
      RANK_CHECK(a->as<float>()[0] == 0 + 1 + 2);
      RANK_CHECK(a->as<float>()[4] == 15);
      for (int i = 0; i < 17; ++i) RANK_CHECK(b_out->as<float>()[i] == 3.0f * i + 3);
      RANK_CHECK(b->as<float>()[16] == 16.0f + rank);  // out of place: the input is left alone
      RANK_CHECK(c->as<float>()[0] == 30);
      // Average and scaling, alone (not grouped).
      auto d = device_floats({2.0f * (rank + 1), 6}, gpu);
      AllreduceOptions scaled;
      scaled.postscale_factor = 0.5;
      rt.allreduce_async("d", d, d, scaled).wait();
      RANK_CHECK(d->as<float>()[0] == 2.0f);  // mean of 2, 4, 6 is 4; halved
      RANK_CHECK(d->as<float>()[1] == 3.0f);
    }
    const InternalStats st = RuntimeAccess::stats(rt);
    RANK_CHECK(st.staged_device_ops >= 6);
    // The staging buffers are reused: a few, not one per operation.
    RANK_CHECK(st.staging_allocations >= 1 && st.staging_allocations <= 4);
  });
}

TEST_CASE("Staged allgather, alltoall, reducescatter and broadcast size and place their outputs",
          "[device][staged]") {
  run_device_ranks(3, [](Runtime& rt, int rank, FakeDeviceMemory&) {
    OpHooks on_gpu;
    on_gpu.context = std::make_shared<FakeDeviceContext>(rank);
    // Allgather with a first dimension that differs per rank: rank r has r+1 rows of 2.
    auto in = std::make_shared<FakeDeviceTensor>(DataType::kInt32, TensorShape{rank + 1, 2}, rank);
    for (int i = 0; i < (rank + 1) * 2; ++i) in->as<int32_t>()[i] = rank * 100 + i;
    Handle g = rt.allgather_async("gathered", in, on_gpu);
    g.wait();
    auto out = std::static_pointer_cast<FakeDeviceTensor>(g.output());
    RANK_CHECK(out->device() == rank);
    RANK_CHECK(out->shape() == (TensorShape{6, 2}));
    const int32_t expect[] = {0, 1, 100, 101, 102, 103, 200, 201, 202, 203, 204, 205};
    for (int i = 0; i < 12; ++i) RANK_CHECK(out->as<int32_t>()[i] == expect[i]);

    // Alltoall with splits: rank r sends r+1 rows to every rank (3(r+1) rows).
    auto send = std::make_shared<FakeDeviceTensor>(DataType::kFloat64, TensorShape{3 * (rank + 1)}, rank);
    for (int i = 0; i < 3 * (rank + 1); ++i) send->as<double>()[i] = rank * 1000 + i;
    const int64_t k = rank + 1;
    Handle t = rt.alltoall_async("swapped", send, {k, k, k}, on_gpu);
    t.wait();
    RANK_CHECK(t.received_splits() == (std::vector<int64_t>{1, 2, 3}));
    auto got = std::static_pointer_cast<FakeDeviceTensor>(t.output());
    RANK_CHECK(got->shape() == TensorShape{6});
    // From rank s: its block for this rank, rows [rank*(s+1), +s+1).
    std::vector<double> want;
    for (int s = 0; s < 3; ++s) {
      for (int i = 0; i < s + 1; ++i) want.push_back(s * 1000 + rank * (s + 1) + i);
    }
    for (int i = 0; i < 6; ++i) RANK_CHECK(got->as<double>()[i] == want[static_cast<size_t>(i)]);

    // Reducescatter of 4 rows: ranks get 2, 1, 1 rows.
    auto whole = device_floats({1, 2, 3, 4}, rank);
    AllreduceOptions sum;
    sum.op = ReduceOp::kSum;
    Handle rs = rt.reducescatter_async("scattered", whole, sum, on_gpu);
    rs.wait();
    auto part = std::static_pointer_cast<FakeDeviceTensor>(rs.output());
    const int rows = rank == 0 ? 2 : 1;
    RANK_CHECK(part->shape() == TensorShape{rows});
    const int first = rank == 0 ? 0 : rank + 1;
    for (int i = 0; i < rows; ++i) RANK_CHECK(part->as<float>()[i] == 3.0f * (first + i + 1));

    // Broadcast out of place from rank 2.
    auto src = device_floats({7.0f + rank, 8.0f + rank}, rank);
    auto dst = device_floats({0, 0}, rank);
    rt.broadcast_async("b", src, dst, 2).wait();
    RANK_CHECK(dst->as<float>()[0] == 9.0f && dst->as<float>()[1] == 10.0f);
    RANK_CHECK(src->as<float>()[0] == 7.0f + rank);
  });
}

TEST_CASE("Staged: pinned memory and OpContext outputs are allocated with the tensor's device current",
          "[device][staged]") {
  run_device_ranks(2, [](Runtime& rt, int rank, FakeDeviceMemory& memory) {
    const int gpu = 3 + 2 * rank;  // never device 0, which a thread nobody set reports
    auto context = std::make_shared<FakeDeviceContext>(gpu, &memory);
    OpHooks on_gpu;
    on_gpu.context = context;
    auto in = device_floats({1.0f + rank, 2}, gpu);
    Handle g = rt.allgather_async("gathered_here", in, on_gpu);
    g.wait();
    auto out = std::static_pointer_cast<FakeDeviceTensor>(g.output());
    RANK_CHECK(out->as<float>()[2] == 2.0f && out->as<float>()[3] == 2.0f);
    RANK_CHECK(context->current_at_allocation == std::vector<int>{gpu});
    RANK_CHECK(!memory.pinned_on.empty());
    for (int d : memory.pinned_on) RANK_CHECK(d == gpu);
    // The framework's thread is left alone: Chorus set no device on it.
    RANK_CHECK(memory.current_device() == -1);
  });
}

TEST_CASE("Staged: the copy in waits for the producer's ready point, completion for the copy back",
          "[device][staged]") {
  run_device_ranks(2, [](Runtime& rt, int rank, FakeDeviceMemory& memory) {
    FakeProducer producer;
    auto t = device_floats({0, 0}, 0, &producer);
    memory.gate = std::make_shared<FakeGate>();  // holds the copies back to the device
    AllreduceOptions sum;
    sum.op = ReduceOp::kSum;
    Handle h = rt.allreduce_async("late", t, t, sum);
    // The producer's kernel "writes" after the enqueue, before its ready
    // point: that is what must be reduced.
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    t->as<float>()[0] = 1.0f + rank;
    t->as<float>()[1] = 10.0f;
    RANK_CHECK(!h.status().is_ok());  // nothing can run before the ready point
    producer.ready->release();
    // Reduced by now on the host, but not copied back: not complete.
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    RANK_CHECK(h.status().code() == StatusCode::kInProgress);
    RANK_CHECK(t->as<float>()[0] == 1.0f + rank);
    memory.gate->release();
    h.wait();
    RANK_CHECK(t->as<float>()[0] == 3.0f);
    RANK_CHECK(t->as<float>()[1] == 20.0f);
    RANK_CHECK(memory.records == 1 && memory.waits == 1);
  });
}

TEST_CASE("Tensors enqueued together from one stream share one ready point; each enqueue call records its own",
          "[device][staged]") {
  run_device_ranks(2, [](Runtime& rt, int rank, FakeDeviceMemory& memory) {
    FakeProducer first, second;
    auto a = device_floats({0}, 0, &first), b = device_floats({0}, 0, &first), c = device_floats({0}, 0, &second);
    AllreduceOptions sum;
    sum.op = ReduceOp::kSum;
    std::vector<Handle> group = rt.grouped_allreduce_async({"a", "b", "c"}, {a, b, c}, {a, b, c}, sum);
    RANK_CHECK(memory.records == 2);  // one per stream: a and b share theirs
    // Written before the streams' ready points: c's producer still holds
    // the whole group back, a shared point does not let a and b run early.
    a->as<float>()[0] = 1.0f + rank;
    b->as<float>()[0] = 10.0f;
    first.ready->release();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    RANK_CHECK(group[0].status().code() == StatusCode::kInProgress);
    c->as<float>()[0] = 100.0f;
    second.ready->release();
    for (auto& h : group) h.wait();
    RANK_CHECK(a->as<float>()[0] == 3.0f && b->as<float>()[0] == 20.0f && c->as<float>()[0] == 200.0f);
    // Separate enqueues from one stream: one ready point each (work may be
    // queued on the stream between the calls).
    FakeProducer third;
    third.ready->release();
    auto d = device_floats({1}, 0, &third), e = device_floats({2}, 0, &third);
    Handle hd = rt.allreduce_async("d", d, d, sum), he = rt.allreduce_async("e", e, e, sum);
    hd.wait();
    he.wait();
    RANK_CHECK(memory.records == 4);
    RANK_CHECK(d->as<float>()[0] == 2.0f && e->as<float>()[0] == 4.0f);
  });
}

TEST_CASE("Staged: the copy back waits for an out-of-place output's own stream and an allocated output's stream",
          "[device][staged]") {
  run_device_ranks(2, [](Runtime& rt, int rank, FakeDeviceMemory& memory) {
    const int gpu = rank;
    // The output is still being read on another stream at enqueue.
    FakeProducer output_stream;
    auto in = device_floats({1.0f + rank, 2}, gpu);
    auto out = device_floats({-1, -1}, gpu, &output_stream);
    AllreduceOptions sum;
    sum.op = ReduceOp::kSum;
    Handle h = rt.allreduce_async("to_busy_output", in, out, sum);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    RANK_CHECK(h.status().code() == StatusCode::kInProgress);
    RANK_CHECK(out->as<float>()[0] == -1.0f);  // not written before its stream's ready point
    output_stream.ready->release();
    h.wait();
    RANK_CHECK(out->as<float>()[0] == 3.0f && out->as<float>()[1] == 4.0f);
    RANK_CHECK(memory.records == 2);  // the input's ready point and the output's

    // An allocated output whose block's last user still has work queued.
    FakeProducer reused_block;
    OpHooks on_gpu;
    on_gpu.context = std::make_shared<FakeDeviceContext>(gpu, &memory, &reused_block);
    Handle g = rt.allgather_async("to_reused_block", in, on_gpu);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    RANK_CHECK(g.status().code() == StatusCode::kInProgress);
    reused_block.ready->release();
    g.wait();
    auto gathered = std::static_pointer_cast<FakeDeviceTensor>(g.output());
    RANK_CHECK(gathered->as<float>()[0] == 1.0f && gathered->as<float>()[2] == 2.0f);
    RANK_CHECK(memory.records == 4);  // + the input's, + the allocated output's stream
  });
}

namespace {
// The job ends after the fake copy failure, and every later call fails with
// `reason` and the failure's own words.
void expect_job_ended(Runtime& rt, const std::string& reason) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (rt.is_running() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  RANK_CHECK(!rt.is_running());
  std::vector<float> host(2, 1.0f);
  auto cpu = std::make_shared<HostTensorView>(host.data(), DataType::kFloat32, TensorShape{2});
  try {
    rt.allreduce_async("after", cpu, cpu);
    throw std::runtime_error("the runtime took a tensor after a device fault");
  } catch (const Error& e) {
    RANK_CHECK(contains(e.what(), reason));
    RANK_CHECK(contains(e.what(), "fake failure"));
  }
}
}  // namespace

TEST_CASE("Staged: a failed copy on one rank fails the tensor on every rank and ends the job with its message",
          "[device][staged][faults]") {
  run_device_ranks(2, [](Runtime& rt, int rank, FakeDeviceMemory& memory) {
    if (rank == 1) memory.fail_copies_to_host = true;
    auto t = device_floats({1, 2}, 0);
    const Status s = rt.allreduce_async("broken", t, t).wait_status();
    RANK_CHECK(!s.is_ok());
    RANK_CHECK(contains(s.message(), "staged allreduce of tensor(s) 'broken'"));
    RANK_CHECK(contains(s.message(), rank == 1 ? "fake failure" : "another rank's copy to the host failed"));
    RANK_CHECK(t->as<float>()[0] == 1.0f);  // nothing stale was written back
    // The same message on every rank: who failed, and how.
    expect_job_ended(rt, "rank 1: the GPU operations failed: staged allreduce of tensor(s) 'broken'");
  });
}

TEST_CASE("Staged: a device fault inside a process set ends the whole job on every rank, members or not",
          "[device][staged][faults][process_set]") {
  run_device_ranks(3, [](Runtime& rt, int rank, FakeDeviceMemory& memory) {
    const ProcessSet set = rt.add_process_set({1, 2});
    if (rank == 1) memory.fail_copies_to_host = true;
    if (rank != 0) {
      auto t = device_floats({1, 2}, 0);
      OpHooks in_set;
      in_set.process_set = set;
      const Status s = rt.allreduce_async("set.broken", t, t, AllreduceOptions{}, in_set).wait_status();
      RANK_CHECK(!s.is_ok());
      RANK_CHECK(contains(s.message(), "'set.broken'"));
    }
    // Rank 0 is not in the set: it hears of the fault through the global set.
    expect_job_ended(rt, "rank 1: the GPU operations failed in process set 1 (ranks 1, 2): staged allreduce");
  });
}

TEST_CASE("Staged: a worker transport that does not start on one rank fails CUDA collectives on every rank, naming it",
          "[device][staged][faults]") {
  RuntimeOptions options = chorus::test::quiet_options();
  options.gpu_operations = GpuOperations::kStaged;
  run_device_ranks(
      3,
      [](Runtime& rt, int rank, FakeDeviceMemory&) {
        auto t = device_floats({1.0f, 2.0f}, 0);
        const Status s = rt.allreduce_async("cuda.grad", t, t).wait_status();
        RANK_CHECK(!s.is_ok());
        RANK_CHECK(contains(s.message(), "staged path's transport did not start on rank 1"));
        RANK_CHECK(contains(s.message(), "cuda.grad"));
        RANK_CHECK(contains(s.message(), "planted start failure") == (rank == 1));
        // Host collectives go on.
        float x = 1.0f + rank;
        auto host = std::make_shared<HostTensorView>(&x, DataType::kFloat32, TensorShape{1});
        AllreduceOptions sum;
        sum.op = ReduceOp::kSum;
        rt.allreduce_async("host", host, host, sum).wait();
        RANK_CHECK(x == 6.0f);
      },
      options, true, 1);
}

TEST_CASE("Staged: a ready point that never comes times out (CHORUS_GPU_OP_TIMEOUT_SECONDS)",
          "[device][staged][faults]") {
  RuntimeOptions options = chorus::test::quiet_options();
  options.gpu_op_timeout_seconds = 0.3;
  run_device_ranks(
      2,
      [](Runtime& rt, int rank, FakeDeviceMemory&) {
        FakeProducer stuck;
        auto t = device_floats({1, 2}, 0, rank == 0 ? &stuck : nullptr);
        const Status s = rt.allreduce_async("hung", t, t).wait_status();
        RANK_CHECK(!s.is_ok());
        if (rank == 0) {
          RANK_CHECK(s.code() == StatusCode::kTimeout);
          RANK_CHECK(contains(s.message(), "staged allreduce of tensor(s) 'hung': the copy to the host did not "
                                           "finish within 0.3 s (CHORUS_GPU_OP_TIMEOUT_SECONDS)"));
        } else {
          RANK_CHECK(contains(s.message(), "another rank's copy to the host failed (on rank 0;"));
        }
        stuck.ready->release();  // the fake's queue may still hold the wait
      },
      options);
}

TEST_CASE("Staged: jobs queued behind a hung copy fail at once, not one timeout each", "[device][staged][faults]") {
  RuntimeOptions options = chorus::test::quiet_options();
  options.gpu_op_timeout_seconds = 1.0;
  options.fusion_threshold_bytes = 0;  // one job per tensor
  run_device_ranks(
      2,
      [](Runtime& rt, int rank, FakeDeviceMemory&) {
        FakeProducer stuck;
        std::vector<std::shared_ptr<Tensor>> tensors;
        std::vector<Handle> handles;
        const auto start = std::chrono::steady_clock::now();
        for (int i = 0; i < 3; ++i) {
          tensors.push_back(device_floats({1, 2}, 0, rank == 0 ? &stuck : nullptr));
          handles.push_back(rt.allreduce_async("hung" + std::to_string(i), tensors.back(), tensors.back()));
        }
        for (Handle& h : handles) RANK_CHECK(!h.wait_status().is_ok());
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        RANK_CHECK(seconds < 2.5);  // one timeout (1 s), not three
        if (rank == 0) {
          const Status last = handles.back().wait_status();
          RANK_CHECK(contains(last.message(), "an earlier device operation failed") ||
                     contains(last.message(), "the GPU operations failed"));
        }
        stuck.ready->release();
      },
      options);
}

TEST_CASE("CHORUS_GPU_OPERATIONS=nccl where NCCL is not available fails on every rank, naming them",
          "[device]") {
  RuntimeOptions options = chorus::test::quiet_options();
  options.gpu_operations = GpuOperations::kNccl;
  run_device_ranks(
      2,
      [](Runtime& rt, int, FakeDeviceMemory&) {
        auto t = device_floats({1, 2}, 0);
        const Status s = rt.allreduce_async("w", t, t).wait_status();
        RANK_CHECK(contains(s.message(), "CUDA tensor 'w'"));
        RANK_CHECK(contains(s.message(), "CHORUS_GPU_OPERATIONS=nccl, but the NCCL device operations are not "
                                         "available on ranks 0, 1"));
        // Staged does not change what a CPU tensor does.
        std::vector<float> host(2, 1.0f);
        auto cpu = std::make_shared<HostTensorView>(host.data(), DataType::kFloat32, TensorShape{2});
        rt.allreduce_async("cpu", cpu, cpu).wait();
        RANK_CHECK(host[0] == 1.0f);
      },
      options);
}

TEST_CASE("One name moves between CPU and CUDA on every rank: the cached slot leaves the fast path",
          "[device][cache]") {
  run_device_ranks(2, [](Runtime& rt, int rank, FakeDeviceMemory&) {
    AllreduceOptions sum;
    sum.op = ReduceOp::kSum;
    for (int step = 0; step < 6; ++step) {
      const float mine = static_cast<float>(step + rank);
      if (step % 3 == 2) {
        auto t = device_floats({mine}, rank);
        rt.allreduce_async("moving", t, t, sum).wait();
        RANK_CHECK(t->as<float>()[0] == 2.0f * step + 1);
      } else {
        std::vector<float> host{mine};
        auto cpu = std::make_shared<HostTensorView>(host.data(), DataType::kFloat32, TensorShape{1});
        rt.allreduce_async("moving", cpu, cpu, sum).wait();
        RANK_CHECK(host[0] == 2.0f * step + 1);
      }
    }
    RANK_CHECK(RuntimeAccess::stats(rt).staged_device_ops == 2);
  });
}

TEST_CASE("Staged: a normal shutdown lets negotiated device work finish", "[device][staged]") {
  run_device_ranks(2, [](Runtime& rt, int rank, FakeDeviceMemory& memory) {
    memory.gate = std::make_shared<FakeGate>();  // the copy back waits
    auto t = device_floats({1.0f + rank}, rank);
    AllreduceOptions sum;
    sum.op = ReduceOp::kSum;
    Handle h = rt.allreduce_async("last", t, t, sum);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // negotiated and reduced, not copied back
    RANK_CHECK(h.status().code() == StatusCode::kInProgress);
    std::thread opener([&memory] {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      memory.gate->release();
    });
    rt.shutdown();  // returns once the staged worker drained
    opener.join();
    RANK_CHECK_OK(h.status());
    RANK_CHECK(t->as<float>()[0] == 3.0f);
  });
}

TEST_CASE("Staged in a process set: the set's own staged path", "[device][staged][process_sets]") {
  run_device_ranks(3, [](Runtime& rt, int rank, FakeDeviceMemory&) {
    const ProcessSet evens = rt.add_process_set({0, 2});
    if (rank == 1) return;
    OpHooks in_set;
    in_set.process_set = evens;
    auto t = device_floats({1.0f + rank, 2}, 0);
    AllreduceOptions sum;
    sum.op = ReduceOp::kSum;
    rt.allreduce_async("in.set", t, t, sum, in_set).wait();
    RANK_CHECK(t->as<float>()[0] == 1.0f + 3.0f);
    RANK_CHECK(t->as<float>()[1] == 4.0f);
  });
}

TEST_CASE("Staged: a rank waiting inside a host collective is reported by the staged worker's watchdog",
          "[device][staged][stall]") {
  RuntimeOptions options = chorus::test::quiet_options();
  options.log_level = LogLevel::kWarning;
  options.stall_check_seconds = 0.2;
  options.gpu_op_timeout_seconds = 0;  // no device timeout: rank 1's copy is only late
  chorus::test::StderrCapture captured;
  run_device_ranks(
      2,
      [](Runtime& rt, int rank, FakeDeviceMemory&) {
        FakeProducer late;
        auto t = device_floats({1, 2}, 0, rank == 1 ? &late : nullptr);
        AllreduceOptions sum;
        sum.op = ReduceOp::kSum;
        Handle h = rt.allreduce_async("slow", t, t, sum);
        if (rank == 1) {
          std::this_thread::sleep_for(std::chrono::milliseconds(800));  // rank 0's worker waits in the collective
          late.ready->release();
        }
        h.wait();
        RANK_CHECK(t->as<float>()[0] == 2.0f);
      },
      options);
  CHECK_THAT(captured.text(), Catch::Contains("this rank has been inside the collective of tensor 'slow'"));
}

TEST_CASE("A cached tensor that moves to the GPU on one rank only: the mismatch, not a stale fast path",
          "[device][cache]") {
  run_device_ranks(2, [](Runtime& rt, int rank, FakeDeviceMemory&) {
    AllreduceOptions sum;
    sum.op = ReduceOp::kSum;
    for (int step = 0; step < 5; ++step) {
      std::vector<float> host{1.0f};
      std::shared_ptr<Tensor> t = std::make_shared<HostTensorView>(host.data(), DataType::kFloat32, TensorShape{1});
      const bool moved = step == 3 && rank == 1;  // steps 1-2 went by cache bits
      if (moved) t = device_floats({1.0f}, 0);
      const Status s = rt.allreduce_async("w", t, t, sum).wait_status();
      if (step == 3) {
        RANK_CHECK(contains(s.message(), "device differs: CPU on rank 0; CUDA on rank 1"));
      } else {
        RANK_CHECK_OK(s);
        RANK_CHECK(host[0] == 2.0f);
      }
    }
    RANK_CHECK(RuntimeAccess::stats(rt).cache_hits > 0);  // the cache was in use before the move
  });
}

// What the NCCL path reports when a response's device work finished (its
// completion thread calls this): the counters the CPU executor keeps.
TEST_CASE("A finished device response counts in the runtime's statistics", "[device][stats]") {
  SharedStats stats;
  record_device_response(stats, ResponseType::kAllreduce, 3, 1200, Status::ok());
  record_device_response(stats, ResponseType::kAllreduce, 1, 400, Status::ok());
  record_device_response(stats, ResponseType::kAllgather, 2, 64, Status::ok());
  record_device_response(stats, ResponseType::kBroadcast, 1, 8, Status::ok());
  record_device_response(stats, ResponseType::kAllreduce, 2, 800, Status::timeout("stuck"));
  const RuntimeStats st = stats.get();
  CHECK(st.tensors_allreduced == 4);
  CHECK(st.bytes_allreduced == 1600);
  CHECK(st.allreduce_ops == 2);
  CHECK(st.fused_allreduce_ops == 1);
  CHECK(st.allgathers == 2);
  CHECK(st.allgather_ops == 1);
  CHECK(st.fused_allgather_ops == 1);
  CHECK(st.broadcasts == 1);
  CHECK(st.errors == 2);
}

namespace {

struct Span {
  std::string label;
  double ts = 0, dur = 0;  // microseconds
};

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The complete events on `row`'s thread of a Chrome trace, in file order.
std::vector<Span> row_spans(const std::string& trace, const std::string& row) {
  const std::regex named("\\{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":0,\"tid\":(\\d+),\"args\":\\{\"name\":\"" + row + "\"");
  std::smatch m;
  if (!std::regex_search(trace, m, named)) return {};
  const std::regex event("\\{\"name\":\"([^\"]*)\",\"ph\":\"X\",\"pid\":0,\"tid\":" + m[1].str() +
                         ",\"ts\":([0-9.]+),\"dur\":([0-9.]+)");
  std::vector<Span> spans;
  for (auto it = std::sregex_iterator(trace.begin(), trace.end(), event); it != std::sregex_iterator(); ++it) {
    spans.push_back({(*it)[1].str(), std::stod((*it)[2].str()), std::stod((*it)[3].str())});
  }
  return spans;
}

}  // namespace

// Rank 0's producer is late (a long copy in there, a long host collective on
// rank 1, which waits for it); rank 1 holds its copy back (long there only).
TEST_CASE("Staged: a CUDA tensor's timeline row shows its queue, copies and host collective in order",
          "[device][staged][timeline]") {
  const std::string path = "chorus_test_device_timeline.json";
  RuntimeOptions options = chorus::test::quiet_options();
  options.timeline_path = path;
  run_device_ranks(2, [](Runtime& rt, int rank, FakeDeviceMemory& memory) {
    FakeProducer producer;
    auto t = device_floats({1.0f + rank, 2}, 0, &producer);
    if (rank == 1) memory.gate = std::make_shared<FakeGate>();
    AllreduceOptions sum;
    sum.op = ReduceOp::kSum;
    Handle h = rt.allreduce_async("dev.grad", t, t, sum);
    if (rank == 1) producer.ready->release();
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    if (rank == 0) producer.ready->release();
    if (rank == 1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(250));  // past the host collective
      memory.gate->release();
    }
    h.wait();
    RANK_CHECK(t->as<float>()[0] == 3.0f);
  }, options);
  const std::string traces[] = {slurp(path), slurp(path + ".rank1")};
  std::remove(path.c_str());
  std::remove((path + ".rank1").c_str());
  const std::vector<std::string> expected = {"NEGOTIATE_ALLREDUCE", "QUEUE", "MEMCPY_IN_HOST_BUFFER", "HOST_ALLREDUCE",
                                             "MEMCPY_OUT_HOST_BUFFER"};
  for (int rank = 0; rank < 2; ++rank) {
    INFO("rank " << rank);
    const std::vector<Span> spans = row_spans(traces[rank], "dev.grad");
    std::vector<std::string> labels;
    for (const Span& s : spans) labels.push_back(s.label);
    REQUIRE(labels == expected);
    for (size_t i = 2; i < spans.size(); ++i) {  // the device spans follow each other without a gap
      CHECK(spans[i].ts == Approx(spans[i - 1].ts + spans[i - 1].dur).margin(0.01));
    }
    CHECK(spans[1].ts >= spans[0].ts);
    const double held_us = 75000;  // of the 150 ms each hold lasts at least
    if (rank == 0) {
      CHECK(spans[2].dur > held_us);  // MEMCPY_IN waited for the producer
      CHECK(spans[4].dur < held_us);
    } else {
      CHECK(spans[2].dur < held_us);
      CHECK(spans[3].dur > held_us);  // HOST_ALLREDUCE waited for rank 0
      CHECK(spans[4].dur > held_us);  // MEMCPY_OUT waited for the gate
    }
  }
}

TEST_CASE("Device activity names are Horovod's", "[device][timeline]") {
  CHECK(device_activity("NCCL_", ResponseType::kAllreduce) == "NCCL_ALLREDUCE");
  CHECK(device_activity("NCCL_", ResponseType::kBroadcast) == "NCCL_BCAST");
  CHECK(device_activity("NCCL_", ResponseType::kAllgather) == "NCCL_ALLGATHER");
  CHECK(device_activity("NCCL_", ResponseType::kAlltoall) == "NCCL_ALLTOALL");
  CHECK(device_activity("HOST_", ResponseType::kReducescatter) == "HOST_REDUCESCATTER");
}

// What the NCCL path's completion thread runs (device_support.cc wires it
// into NcclOperationsSettings::trace): a span per tensor from the launch.
TEST_CASE("A device span runs on another thread and covers launch to completion on each tensor's row",
          "[device][timeline]") {
  std::vector<TensorEntry> entries(2);
  entries[0].request.name = "w";
  entries[1].request.name = "b";
  detail::Timeline timeline;
  CHECK(!device_span(timeline, "NCCL_ALLREDUCE", entries, Timeline::Clock::now()));  // off: nothing to do
  const std::string path = "chorus_test_device_span.json";
  REQUIRE(timeline.open(path, 0).is_ok());
  const auto launched = Timeline::Clock::now();
  auto finish = device_span(timeline, "NCCL_ALLREDUCE", entries, launched);
  REQUIRE(finish);
  entries.clear();  // the span keeps the names, not the entries
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  std::thread completion([&] { finish(Status::ok()); });
  completion.join();
  REQUIRE(timeline.close());
  const std::string trace = slurp(path);
  std::remove(path.c_str());
  for (const char* row : {"w", "b"}) {
    INFO(row);
    const std::vector<Span> spans = row_spans(trace, row);
    REQUIRE(spans.size() == 1);
    CHECK(spans[0].label == "NCCL_ALLREDUCE");
    CHECK(spans[0].dur >= 20000);
  }
}
