// Fused allgathers on in-process ranks: tensors ready in the same cycle
// travel as one data-plane allgather (RuntimeStats says so), the results are
// exact, and the fusion threshold bounds each fused operation.
#include <catch2/catch.hpp>

#include "chorus/runtime.h"
#include "loopback_job.h"

using namespace chorus;
using chorus::test::run_ranks;

namespace {

// Tensor t on rank r: (r + t) % 3 rows of (t % 4 + 1) int32 columns, value
// 1000 * t + 100 * r + element index.
int64_t rows_of(int t, int r) { return (r + t) % 3; }
int64_t cols_of(int t) { return t % 4 + 1; }
int32_t value(int t, int r, int64_t i) { return static_cast<int32_t>(1000 * t + 100 * r + i); }

// Enqueues `n` allgathers on every rank and checks every output exactly.
void gather_and_check(Runtime& rt, int rank, int size, int n) {
  std::vector<std::vector<int32_t>> ins(static_cast<size_t>(n));
  std::vector<Handle> handles;
  for (int t = 0; t < n; ++t) {
    auto& in = ins[static_cast<size_t>(t)];
    in.resize(static_cast<size_t>(rows_of(t, rank) * cols_of(t)));
    for (size_t i = 0; i < in.size(); ++i) in[i] = value(t, rank, static_cast<int64_t>(i));
    handles.push_back(rt.allgather_async(
        "fg." + std::to_string(t),
        std::make_shared<HostTensorView>(in.data(), DataType::kInt32, TensorShape{rows_of(t, rank), cols_of(t)})));
  }
  for (int t = 0; t < n; ++t) {
    Handle& h = handles[static_cast<size_t>(t)];
    h.wait();
    auto out = h.output();
    RANK_CHECK(out != nullptr);
    int64_t rows = 0;
    for (int r = 0; r < size; ++r) rows += rows_of(t, r);
    RANK_CHECK(out->shape() == TensorShape({rows, cols_of(t)}));
    const int32_t* v = static_cast<const int32_t*>(out->data());
    int64_t at = 0;
    for (int r = 0; r < size; ++r) {
      for (int64_t i = 0; i < rows_of(t, r) * cols_of(t); ++i) RANK_CHECK(v[at++] == value(t, r, i));
    }
  }
}

// The coordinator holds ready tensors while others are still arriving, so
// with a long hold every rank's burst arrives complete and fuses.
RuntimeOptions hold_bursts(int64_t threshold_bytes) {
  RuntimeOptions o = test::quiet_options();
  o.fusion_wait_us = 2e6;
  o.fusion_threshold_bytes = threshold_bytes;
  return o;
}

}  // namespace

TEST_CASE("Allgathers ready together run as one fused allgather, exactly", "[runtime][allgather][fusion]") {
  for (int size : {1, 2, 3, 4}) {
    INFO("world size " << size);
    run_ranks(size, [size](Runtime& rt, int rank) {
      const int n = 12;
      gather_and_check(rt, rank, size, n);
      const RuntimeStats st = rt.stats();
      RANK_CHECK(st.allgathers == n);
      if (size == 1) return;  // alone, each tensor is ready the moment it is enqueued
      RANK_CHECK(st.fused_allgather_ops >= 1);
      RANK_CHECK(st.allgather_ops < n);
    }, hold_bursts(1 << 20));
  }
}

TEST_CASE("The fusion threshold bounds fused allgathers; 0 turns fusion off", "[runtime][allgather][fusion]") {
  // Outputs at 3 ranks: tensor t has 3 rows of cols_of(t) int32s, so 12..48
  // bytes; 64 bytes holds at most 5 of the smallest, never all 12.
  run_ranks(3, [](Runtime& rt, int rank) {
    gather_and_check(rt, rank, 3, 12);
    const RuntimeStats st = rt.stats();
    RANK_CHECK(st.allgathers == 12);
    RANK_CHECK(st.allgather_ops >= 12 * 30 / 64);  // total output bytes / threshold
    RANK_CHECK(st.fused_allgather_ops >= 1);
  }, hold_bursts(64));
  run_ranks(3, [](Runtime& rt, int rank) {
    gather_and_check(rt, rank, 3, 6);
    RANK_CHECK(rt.stats().allgather_ops == 6);
    RANK_CHECK(rt.stats().fused_allgather_ops == 0);
  }, hold_bursts(0));
}
