// The batched pack/unpack kernels against the CPU path's scale_copy, bit for
// bit, for every dtype: odd sizes, unaligned tensors, more tensors than one
// launch takes, and prescale / postscale / Average divisors folded in.
#include <catch2/catch.hpp>

#include <cstring>
#include <random>
#include <vector>

#include "common/half.h"
#include "device_buffer.h"
#include "device_values.h"
#include "device/cuda/device_fusion.h"
#include "kernels/reduce_kernels.h"

using namespace chorus;
using namespace chorus::detail;
using namespace chorus::detail::gpu;
using chorus::test::DeviceBuffer;
using chorus::test::random_elements;

namespace {

struct Batch {
  std::vector<int64_t> counts;
  std::vector<int64_t> starts;  // element offsets of each tensor in one arena: mostly unaligned
  int64_t total = 0;
};

Batch make_batch(size_t pieces, std::mt19937_64& rng) {
  Batch b;
  std::uniform_int_distribution<int64_t> size(0, 700);
  for (size_t i = 0; i < pieces; ++i) {
    int64_t n = i == 3 ? 100003 : size(rng);  // one large tensor: several blocks per copy
    b.counts.push_back(n);
    b.starts.push_back(b.total);
    b.total += n + static_cast<int64_t>(i % 3);  // gaps so inputs start at odd addresses
  }
  return b;
}

std::vector<DevicePiece> pieces_in(const Batch& b, const DeviceBuffer& in, const DeviceBuffer& out, int64_t esize) {
  std::vector<DevicePiece> pieces;
  for (size_t i = 0; i < b.counts.size(); ++i) {
    pieces.push_back({in.data() + b.starts[i] * esize, out.data() + b.starts[i] * esize, b.counts[i]});
  }
  return pieces;
}

void check_round_trip(DataType dtype, size_t count, double prescale, CopyScale postscale) {
  INFO(dtype_name(dtype) << ", " << count << " tensors, prescale " << prescale << ", postscale "
                         << postscale.factor << " / " << postscale.divisor);
  std::mt19937_64 rng(static_cast<uint64_t>(dtype) * 7919 + count);
  const int64_t esize = dtype_size(dtype);
  const Batch b = make_batch(count, rng);
  CopyPlan plan;
  std::string error;
  REQUIRE(plan_copies(b.counts, esize, kMaxCopiesPerLaunch, &plan, &error));
  const std::vector<char> input = random_elements(dtype, b.total, rng);
  DeviceBuffer in(input.size()), out(input.size()), fusion(static_cast<size_t>(plan.buffer_bytes));
  in.upload(input);
  const std::vector<DevicePiece> pieces = pieces_in(b, in, out, esize);

  REQUIRE(pack_pieces(pieces, dtype, prescale, plan, fusion.data(), nullptr).is_ok());
  std::vector<char> packed = fusion.download();
  std::vector<char> expected(packed.size());
  for (size_t i = 0; i < count; ++i) {
    scale_copy(expected.data() + plan.offsets[i], input.data() + b.starts[i] * esize, b.counts[i], dtype, prescale, 1);
    INFO("pack, tensor " << i << " of " << b.counts[i] << " elements");
    CHECK(std::memcmp(packed.data() + plan.offsets[i], expected.data() + plan.offsets[i],
                      static_cast<size_t>(b.counts[i] * esize)) == 0);
  }

  // Unpack what the pack produced, as if it were the reduced result.
  REQUIRE(unpack_pieces(pieces, dtype, postscale, plan, fusion.data(), nullptr).is_ok());
  const std::vector<char> unpacked = out.download();
  for (size_t i = 0; i < count; ++i) {
    std::vector<char> want(static_cast<size_t>(b.counts[i] * esize) + 1);
    scale_copy(want.data(), packed.data() + plan.offsets[i], b.counts[i], dtype, postscale.factor, postscale.divisor);
    INFO("unpack, tensor " << i << " of " << b.counts[i] << " elements");
    CHECK(std::memcmp(unpacked.data() + b.starts[i] * esize, want.data(), static_cast<size_t>(b.counts[i] * esize)) == 0);
  }
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
}

const DataType kAllTypes[] = {DataType::kUInt8, DataType::kInt8, DataType::kInt16, DataType::kInt32, DataType::kInt64,
                              DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32, DataType::kFloat64,
                              DataType::kBool};

}  // namespace

TEST_CASE("Pack and unpack copy exactly when nothing scales", "[device][fusion]") {
  for (DataType dtype : kAllTypes) check_round_trip(dtype, 2 * kMaxCopiesPerLaunch + 13, 1.0, {1.0, 1});
}

TEST_CASE("Prescale on pack, postscale on unpack, as the CPU path computes them", "[device][fusion]") {
  for (DataType dtype : kAllTypes) {
    check_round_trip(dtype, kMaxCopiesPerLaunch + 1, 0.5, {3.0, 1});
    check_round_trip(dtype, 7, 1.0 / 3.0, {0.25, 1});
  }
}

TEST_CASE("The Average divisor is exact for integers and folded into floats", "[device][fusion]") {
  for (DataType dtype : kAllTypes) {
    check_round_trip(dtype, 200, 1.0, {1.0, 3});   // integers: int64 division, truncated
    check_round_trip(dtype, 200, 1.0, {0.5, 7});   // integers: through double
    check_round_trip(dtype, 20, 1.0, {1e30, 1});   // integers saturate at the type's range
  }
}

TEST_CASE("A plan for another batch is refused", "[device][fusion]") {
  CopyPlan plan;
  std::string error;
  REQUIRE(plan_copies({4, 4}, 4, kMaxCopiesPerLaunch, &plan, &error));
  std::vector<DevicePiece> one{{nullptr, nullptr, 4}};
  chorus::Status s = pack_pieces(one, DataType::kFloat32, 1.0, plan, nullptr, nullptr);
  CHECK(s.message() == "the copy plan has 2 pieces, the batch 1");
}
