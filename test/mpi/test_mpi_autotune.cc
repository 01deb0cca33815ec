// Autotune under the launcher: run only by the ctest entries mpi_autotune_np*
// (hidden tag), which turn CHORUS_AUTOTUNE on with one-sample trials. Every
// rank must have applied the same settings before the same response lists.
#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

#include "chorus/chorus.h"
#include "api/runtime_access.h"

using namespace chorus;

TEST_CASE("Every rank applies each autotuned setting before the same list", "[.autotune]") {
  REQUIRE(runtime().options().autotune);  // run with CHORUS_AUTOTUNE=1 (test/mpi/CMakeLists.txt)
  std::vector<float> a(5000, 1.0f), b(700, 2.0f);
  auto ta = std::make_shared<HostTensorView>(a.data(), DataType::kFloat32, TensorShape{5000});
  auto tb = std::make_shared<HostTensorView>(b.data(), DataType::kFloat32, TensorShape{700});
  for (int step = 0; step < 300; ++step) {
    Handle ha = allreduce_async("tune.a", ta, ta), hb = allreduce_async("tune.b", tb, tb);
    ha.wait(std::chrono::seconds(60));
    hb.wait(std::chrono::seconds(60));
  }
  barrier();  // the search ended (asserted below): no change can follow the barrier
  const auto applied = detail::RuntimeAccess::stats(runtime()).tuning_applied;
  REQUIRE(applied.size() == 5 + 5 + 4 + 1);  // the trials and the final choice
  REQUIRE(applied.back().settings.trial == -1);
  // Rank 0's record, broadcast, against this rank's: round, trial and the three settings.
  std::vector<double> mine, root;
  for (const auto& t : applied) {
    mine.insert(mine.end(), {double(t.round), double(t.settings.trial), double(t.settings.fusion_threshold_bytes),
                             t.settings.fusion_wait_us, t.settings.cycle_time_ms});
  }
  root = mine;
  auto view = std::make_shared<HostTensorView>(root.data(), DataType::kFloat64, TensorShape{int64_t(root.size())});
  broadcast_async("tune.record", view, 0).wait(std::chrono::seconds(60));
  REQUIRE(root == mine);
}
