// Grouped allgather / reducescatter and allgather_object under mpirun,
// against what every rank can compute alone; a group whose members differ
// across ranks fails on every rank naming the member and the ranks.
#include <map>

#include "torch_test_util.h"

using namespace chorus;

namespace {

// Rank r's member m: r + m + 1 rows (a different first dimension per rank) of distinct values.
torch::Tensor member(int r, int m, torch::Dtype dtype) {
  return (torch::arange((r + m + 1) * 3, torch::kFloat64).reshape({r + m + 1, 3}) + 100 * r + 1000 * m).to(dtype);
}

struct Point {
  int32_t rank;
  double value;
};

}  // namespace

TEST_CASE("torch grouped allgather equals the concatenation of each member", "[torch][group]") {
  const int n = chorus::size(), me = chorus::rank();
  const std::vector<torch::Dtype> dtypes = {torch::kFloat32, torch::kInt64, torch::kFloat64};
  std::vector<torch::Tensor> mine;
  for (int m = 0; m < 3; ++m) mine.push_back(member(me, m, dtypes[m]));
  std::vector<torch::Tensor> out = grouped_allgather(mine, "torch.grouped.allgather");
  REQUIRE(out.size() == 3);
  for (int m = 0; m < 3; ++m) {
    std::vector<torch::Tensor> every;
    for (int r = 0; r < n; ++r) every.push_back(member(r, m, dtypes[m]));
    CHECK(out[m].scalar_type() == dtypes[m]);
    CHECK(torch::equal(out[m], torch::cat(every)));
  }
  std::vector<TensorHandle> handles = grouped_allgather_async(mine);  // unnamed
  handles.back().wait();
  for (const TensorHandle& h : handles) CHECK(h.poll());  // completed together
}

TEST_CASE("torch grouped reducescatter reduces and scatters each member", "[torch][group]") {
  const int n = chorus::size(), me = chorus::rank();
  const std::vector<int64_t> rows = {int64_t(n) + 1, 1, 2 * int64_t(n)};
  for (ReduceOp op : {Sum, Average}) {
    std::vector<torch::Tensor> mine;
    for (size_t m = 0; m < rows.size(); ++m) mine.push_back(torch::full({rows[m], 2}, double(me + 1 + m)));
    AllreduceOptions options;
    options.op = op;
    std::vector<torch::Tensor> out = grouped_reducescatter(mine, std::string("torch.grouped.rs.") + reduce_op_name(op), options);
    for (size_t m = 0; m < rows.size(); ++m) {
      const int64_t expected_rows = rows[m] / n + (me < rows[m] % n ? 1 : 0);
      double total = 0;
      for (int r = 0; r < n; ++r) total += r + 1 + double(m);
      CHECK(out[m].size(0) == expected_rows);
      CHECK(out[m].eq(op == Sum ? total : total / n).all().item<bool>());
    }
  }
}

TEST_CASE("A grouped allgather whose member differs on the last rank fails on every rank", "[torch][group][errors]") {
  const int n = chorus::size();
  if (n < 2) return;  // needs two ranks to disagree
  torch::Tensor a = torch::ones({2, 3});
  torch::Tensor b = chorus::rank() == n - 1 ? torch::ones({2, 4}) : torch::ones({2, 3});
  try {
    grouped_allgather({a, b}, "torch.grouped.bad");
    FAIL("the grouped allgather did not fail");
  } catch (const InvalidArgumentError& e) {
    CHECK_THAT(e.what(), Catch::Contains("Grouped allgather"));
    CHECK_THAT(e.what(), Catch::Contains("torch.grouped.bad.1"));
    CHECK_THAT(e.what(), Catch::Contains("rank " + std::to_string(n - 1)));
  }
  // The job goes on.
  CHECK(grouped_allgather({a, a}, "torch.grouped.after")[1].size(0) == 2 * n);
}

TEST_CASE("allgather_object: structs, strings of any length, tensors, in a process set", "[torch][object]") {
  const int n = chorus::size(), me = chorus::rank();
  std::vector<Point> points = allgather_object(Point{me, me * 0.5}, "objects.points");
  std::vector<std::string> words = allgather_object(std::string(static_cast<size_t>(me), 'x'));  // rank 0: empty
  std::vector<torch::Tensor> tensors = allgather_object(torch::full({me + 1}, me, torch::kInt64));
  REQUIRE(points.size() == static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) {
    CHECK(points[r].rank == r);
    CHECK(points[r].value == r * 0.5);
    CHECK(words[r] == std::string(static_cast<size_t>(r), 'x'));
    CHECK(torch::equal(tensors[r], torch::full({r + 1}, r, torch::kInt64)));
  }
  // Containers, nested, and a generic dict (Horovod's test gathers dicts).
  using Record = std::map<std::string, std::vector<int64_t>>;
  const std::vector<Record> records = allgather_object(Record{{"rank", {me}}, {"ones", std::vector<int64_t>(me, 1)}});
  const std::vector<std::vector<std::string>> lists =
      allgather_object(std::vector<std::string>(static_cast<size_t>(me), std::to_string(me)));
  c10::impl::GenericDict dict(c10::StringType::get(), c10::AnyType::get());
  dict.insert("rank", me);
  dict.insert("name", "rank " + std::to_string(me));
  const std::vector<c10::IValue> dicts = allgather_object(c10::IValue(dict), "objects.dicts");
  for (int r = 0; r < n; ++r) {
    CHECK(records[r] == Record{{"rank", {r}}, {"ones", std::vector<int64_t>(r, 1)}});
    CHECK(lists[r] == std::vector<std::string>(static_cast<size_t>(r), std::to_string(r)));
    const c10::impl::GenericDict got = dicts[r].toGenericDict();
    CHECK(got.at("rank").toInt() == r);
    CHECK(got.at("name").toStringRef() == "rank " + std::to_string(r));
  }
  // Among the ranks from 1 on (rank 0 alone at one rank).
  std::vector<int> members;
  for (int r = n > 1 ? 1 : 0; r < n; ++r) members.push_back(r);
  const ProcessSet set = add_process_set(members);
  if (set.rank_of(me) >= 0) {
    std::vector<int32_t> ranks = allgather_object(int32_t(me), "objects.set", set);
    CHECK(ranks == std::vector<int32_t>(members.begin(), members.end()));
    CHECK(broadcast_object(std::string("from ") + std::to_string(me), members.back(), "objects.bcast", set) ==
          "from " + std::to_string(members.back()));
  }
  barrier();
  remove_process_set(set);
}
