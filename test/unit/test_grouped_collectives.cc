// Grouped allgather and grouped reducescatter on in-process ranks: results
// against a reference computed here, completion together, and members that
// disagree across ranks failing the whole group on every rank.
#include <catch2/catch.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "chorus/error.h"
#include "loopback_job.h"
#include "engine/handle_state.h"
#include "engine/tensor_entry.h"

using namespace chorus;
using chorus::test::run_ranks;

namespace {

std::shared_ptr<HostTensorView> rows_of(std::vector<float>& v, int64_t rows) {
  return std::make_shared<HostTensorView>(v.data(), DataType::kFloat32,
                                          TensorShape{rows, static_cast<int64_t>(v.size()) / rows});
}

// What rank `r` holds in member `m`: distinct everywhere, so a misplaced row shows.
float value(int r, int m, int i) { return float(1000 * m + 100 * r + i); }

// Rows that member m of rank r contributes to an allgather: differ per rank and member.
int64_t gather_rows(int r, int m) { return (r + m) % 3 + (m == 0 ? 0 : 1); }

constexpr int64_t kCols = 2;

}  // namespace

TEST_CASE("A grouped allgather gathers each member in rank order and completes together", "[runtime][group]") {
  for (int size : {1, 2, 3, 4}) {
    INFO("world size " << size);
    run_ranks(size, [size](Runtime& rt, int rank) {
      const int members = 3;
      std::vector<std::vector<float>> bufs(members);
      std::vector<std::shared_ptr<Tensor>> inputs;
      std::vector<std::string> names;
      for (int m = 0; m < members; ++m) {
        const int64_t rows = gather_rows(rank, m);
        for (int64_t i = 0; i < rows * kCols; ++i) bufs[m].push_back(value(rank, m, int(i)));
        inputs.push_back(std::make_shared<HostTensorView>(bufs[m].data(), DataType::kFloat32, TensorShape{rows, kCols}));
        names.push_back("ag." + std::to_string(m));
      }
      std::vector<Handle> handles = rt.grouped_allgather_async(names, inputs);
      handles.back().wait(std::chrono::seconds(20));
      for (const Handle& h : handles) RANK_CHECK(h.poll());  // the last one done => all done
      for (int m = 0; m < members; ++m) {
        std::vector<float> expected;
        for (int r = 0; r < size; ++r) {
          for (int64_t i = 0; i < gather_rows(r, m) * kCols; ++i) expected.push_back(value(r, m, int(i)));
        }
        auto out = handles[m].output();
        RANK_CHECK(out->shape().dim_size(0) * kCols == static_cast<int64_t>(expected.size()));
        const float* got = static_cast<const float*>(out->data());
        for (size_t i = 0; i < expected.size(); ++i) RANK_CHECK(got[i] == expected[i]);
      }
    });
  }
}

TEST_CASE("A grouped reducescatter reduces each member and scatters its rows", "[runtime][group]") {
  for (int size : {1, 2, 3, 4}) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAverage}) {
      INFO("world size " << size << ", " << reduce_op_name(op));
      run_ranks(size, [size, op](Runtime& rt, int rank) {
        const std::vector<int64_t> rows = {5, 1, 8};  // uneven, and fewer rows than ranks
        std::vector<std::vector<float>> bufs(rows.size());
        std::vector<std::shared_ptr<Tensor>> inputs;
        std::vector<std::string> names;
        for (size_t m = 0; m < rows.size(); ++m) {
          for (int64_t i = 0; i < rows[m] * kCols; ++i) bufs[m].push_back(value(rank, int(m), int(i)));
          inputs.push_back(rows_of(bufs[m], rows[m]));
          names.push_back("rs." + std::to_string(m));
        }
        AllreduceOptions options;
        options.op = op;
        std::vector<Handle> handles = rt.grouped_reducescatter_async(names, inputs, options);
        for (const Handle& h : handles) h.wait(std::chrono::seconds(20));
        for (size_t m = 0; m < rows.size(); ++m) {
          // Rank r keeps rows [offset, offset + n): the first rows % size ranks one more.
          const int64_t base = rows[m] / size, extra = rows[m] % size;
          const int64_t mine = base + (rank < extra ? 1 : 0);
          const int64_t offset = rank * base + std::min<int64_t>(rank, extra);
          auto out = handles[m].output();
          RANK_CHECK(out->shape().dim_size(0) == mine);
          const float* got = static_cast<const float*>(out->data());
          for (int64_t i = 0; i < mine * kCols; ++i) {
            double sum = 0;
            for (int r = 0; r < size; ++r) sum += value(r, int(m), int(offset * kCols + i));
            RANK_CHECK(got[i] == Approx(op == ReduceOp::kSum ? sum : sum / size));
          }
        }
      });
    }
  }
}

TEST_CASE("A grouped allgather whose member differs on one rank fails on every rank, naming it", "[runtime][group][errors]") {
  run_ranks(3, [](Runtime& rt, int rank) {
    std::vector<float> a(4, 1.0f), b(6, 2.0f);
    // Member "bad.1" has 3 columns on rank 2, 2 elsewhere.
    auto second = std::make_shared<HostTensorView>(b.data(), DataType::kFloat32,
                                                   rank == 2 ? TensorShape{2, 3} : TensorShape{3, 2});
    std::vector<Handle> handles = rt.grouped_allgather_async({"bad.0", "bad.1"}, {rows_of(a, 2), second});
    for (const Handle& h : handles) {
      std::string message;
      try {
        h.wait(std::chrono::seconds(20));
      } catch (const InvalidArgumentError& e) {
        message = e.what();
      }
      RANK_CHECK(message.find("Grouped allgather") != std::string::npos);
      RANK_CHECK(message.find("bad.1") != std::string::npos);
      RANK_CHECK(message.find("rank 2") != std::string::npos);
    }
    // The job goes on: the same group, now agreed.
    auto fixed = std::make_shared<HostTensorView>(b.data(), DataType::kFloat32, TensorShape{3, 2});
    for (const Handle& h : rt.grouped_allgather_async({"bad.0", "bad.1"}, {rows_of(a, 2), fixed})) {
      h.wait(std::chrono::seconds(20));
    }
  });
}

TEST_CASE("A grouped allreduce with more members on one rank fails on every rank instead of waiting", "[runtime][group][errors]") {
  const int extra_rank = GENERATE(0, 2);  // the coordinator's own group, or a worker's, is the larger
  run_ranks(3, [extra_rank](Runtime& rt, int rank) {
    std::vector<std::vector<float>> bufs(3, std::vector<float>(5, float(rank + 1)));
    std::vector<std::string> names = {"m.0", "m.1"};
    std::vector<std::shared_ptr<Tensor>> tensors = {rows_of(bufs[0], 1), rows_of(bufs[1], 1)};
    if (rank == extra_rank) {
      names.push_back("m.2");
      tensors.push_back(rows_of(bufs[2], 1));
    }
    for (const Handle& h : rt.grouped_allreduce_async(names, tensors, {}, AllreduceOptions{})) {
      std::string message;
      try {
        h.wait(std::chrono::seconds(20));
      } catch (const InvalidArgumentError& e) {
        message = e.what();
      }
      RANK_CHECK(message.find("Grouped allreduce") != std::string::npos);
      RANK_CHECK(message.find("3 tensors") != std::string::npos);
      RANK_CHECK(message.find("rank " + std::to_string(extra_rank)) != std::string::npos);
    }
    // The job goes on: the same names in one agreed group.
    AllreduceOptions sum;
    sum.op = ReduceOp::kSum;
    auto handles = rt.grouped_allreduce_async({"m.0", "m.1"}, {rows_of(bufs[0], 1), rows_of(bufs[1], 1)}, {}, sum);
    for (const Handle& h : handles) h.wait(std::chrono::seconds(20));
    RANK_CHECK(bufs[0][4] == 6.0f);
    RANK_CHECK(bufs[1][0] == 6.0f);
  });
}

TEST_CASE("Grouped allgather and reducescatter in a process set", "[runtime][group][process_set]") {
  run_ranks(3, [](Runtime& rt, int rank) {
    const ProcessSet set = rt.add_process_set({1, 2});
    if (rank == 0) return;
    OpHooks hooks;
    hooks.process_set = set;
    std::vector<float> a(2, float(rank)), b(4, float(rank));
    auto gathered = rt.grouped_allgather_async({"s.a", "s.b"}, {rows_of(a, 1), rows_of(b, 2)}, hooks);
    AllreduceOptions sum;
    sum.op = ReduceOp::kSum;
    auto scattered = rt.grouped_reducescatter_async({"s.c"}, {rows_of(b, 2)}, sum, hooks);
    for (const Handle& h : gathered) h.wait(std::chrono::seconds(20));
    scattered[0].wait(std::chrono::seconds(20));
    const float* g = static_cast<const float*>(gathered[1].output()->data());
    RANK_CHECK(gathered[1].output()->shape().dim_size(0) == 4);
    RANK_CHECK(g[0] == 1.0f && g[7] == 2.0f);
    RANK_CHECK(static_cast<const float*>(scattered[0].output()->data())[1] == 3.0f);
    RANK_CHECK(scattered[0].output()->shape().dim_size(0) == 1);
  });
}

TEST_CASE("A grouped call with mismatched lists is refused (at the wait when it has names to negotiate)", "[runtime][group][errors]") {
  run_ranks(1, [](Runtime& rt, int) {
    std::vector<float> a(2);
    bool refused = false;
    try {
      for (const Handle& h : rt.grouped_allgather_async({"x", "y"}, {rows_of(a, 1)})) h.wait();
    } catch (const InvalidArgumentError& e) {
      refused = std::string(e.what()).find("grouped allgather 'x'") != std::string::npos;
    }
    RANK_CHECK(refused);
    refused = false;
    try {
      rt.grouped_reducescatter_async({}, {});
    } catch (const InvalidArgumentError& e) {
      refused = std::string(e.what()).find("no tensors") != std::string::npos;
    }
    RANK_CHECK(refused);
  });
  // Hooks per member must name one process set, one hooks per name; a rank
  // whose hooks are wrong refuses the group in member 0's set: every rank's
  // handles fail, naming it.
  run_ranks(2, [](Runtime& rt, int rank) {
    const ProcessSet set = rt.add_process_set({0, 1});
    std::vector<float> a(2), b(2);
    for (int bad : {0, 1, 2}) {  // member 1 in another set; one hooks for two names; good hooks
      std::vector<OpHooks> hooks(2);
      if (rank == 1 && bad == 0) hooks[1].process_set = set;
      if (rank == 1 && bad == 1) hooks.pop_back();
      std::string message;
      for (const Handle& h : rt.grouped_allgather_async({"p", "q"}, {rows_of(a, 1), rows_of(b, 1)}, hooks)) {
        try {
          h.wait(std::chrono::seconds(20));
        } catch (const InvalidArgumentError& e) {
          message = e.what();
        }
      }
      if (bad == 2) {
        RANK_CHECK(message.empty());
        continue;
      }
      RANK_CHECK(message.find("refused on rank 1") != std::string::npos);
      RANK_CHECK(message.find(bad == 0 ? "member 1 ('q') is in process set 1" : "2 names but 1 hooks") !=
                 std::string::npos);
    }
    // No hooks at all: no set to negotiate in, refused at the call.
    bool refused = false;
    try {
      rt.grouped_allgather_async({"p", "q"}, {rows_of(a, 1), rows_of(b, 1)}, std::vector<OpHooks>{});
    } catch (const InvalidArgumentError& e) {
      refused = std::string(e.what()).find("2 names but no hooks") != std::string::npos;
    }
    RANK_CHECK(refused);
  });
}

// A group split over two responses can finish on two threads at once (on the
// NCCL path: one response on the completion thread, the next failed on the
// background thread after a fault). Every member must complete exactly once.
TEST_CASE("A group's members finished from two threads at once complete the group once", "[runtime][group]") {
  constexpr int kGroups = 20000;
  for (int round = 0; round < 5; ++round) {
    std::vector<std::shared_ptr<detail::HandleState>> handles;
    std::vector<std::array<detail::TensorEntry, 2>> members(kGroups);
    std::atomic<int> callbacks{0};
    for (auto& pair : members) {
      auto group = std::make_shared<detail::GroupCompletion>(2);
      for (detail::TensorEntry& e : pair) {
        e.request.name = "g";
        e.handle = std::make_shared<detail::HandleState>();
        e.hooks.on_complete = [&callbacks](const Status&) { callbacks.fetch_add(1); };
        e.group = group;
        handles.push_back(e.handle);
      }
    }
    std::atomic<int> ready{0};
    auto finish_side = [&](size_t side, const Status& status) {
      ready.fetch_add(1);
      while (ready.load() < 2) std::this_thread::yield();  // both start together
      for (auto& pair : members) {
        detail::CompletionBatch batch;
        detail::finish_entry(std::move(pair[side]), status, batch);
      }
    };
    std::thread completion(finish_side, 0, Status::ok());
    std::thread background(finish_side, 1, Status::aborted("the GPU operations failed"));
    completion.join();
    background.join();
    int done = 0;
    for (const auto& h : handles) done += h->done() && h->status().code() == StatusCode::kAborted;
    REQUIRE(done == 2 * kGroups);
    REQUIRE(callbacks.load() == 2 * kGroups);
  }
}
