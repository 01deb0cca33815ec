// Request's one description (negotiation/request_fields.h): the wire form
// stays byte for byte what it was, every row round-trips, and a change of
// any row is seen by equality, and by the signature exactly when the ranks
// must agree on it.
#include <catch2/catch.hpp>

#include <cstdio>
#include <type_traits>

#include "negotiation/request_fields.h"

using namespace chorus;
using namespace chorus::detail;

namespace {

Request every_field_set() {
  Request a;
  a.rank = 3;
  a.type = CollectiveType::kBroadcast;
  a.name = "layer1.weight";
  a.dtype = DataType::kBFloat16;
  a.shape = {17, 0, int64_t{1} << 40};
  a.op = ReduceOp::kMax;
  a.prescale = 0.5;
  a.postscale = -4.25;
  a.root_rank = -1;
  a.named_root = 9;
  a.device = 2;
  a.group = "g1";
  a.group_size = 5;
  a.splits = {1, 2, 3};
  a.process_set_ranks = {0, 2, 7};
  a.device_kind = DeviceKind::kCuda;  // on GPU 2
  return a;
}

std::string hex(const std::string& bytes) {
  std::string out;
  char two[3];
  for (unsigned char c : bytes) {
    std::snprintf(two, sizeof two, "%02x", c);
    out += two;
  }
  return out;
}

// Another valid value of the same field (valid: it must also decode).
template <class T>
T changed(const T& v) {
  if constexpr (std::is_same_v<T, std::string>) return v + "x";
  else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
    T out = v;
    out.push_back(1);
    return out;
  } else if constexpr (std::is_same_v<T, double>) return v * 2 + 1;
  else if constexpr (std::is_enum_v<T>) return static_cast<T>(static_cast<int>(v) == 0 ? 1 : 0);
  else return v + 1;
}

}  // namespace

TEST_CASE("The wire form of a request stays byte for byte what it is (CRQ4)", "[messages][fields]") {
  RequestList l;
  l.requests = {every_field_set(), Request()};
  l.requests[0].refused = "no";
  l.cached.add(70);
  l.cache_epoch = 0x0102030405060708ULL;
  l.shutdown = true;
  // Written by the field-by-field encoder before the rows existed, then with
  // "CRQ3": the shutdown reason after the flag (4 zero bytes: empty) and the
  // device kind after each request's member ranks (01000000: CUDA, then 0);
  // "CRQ4": the refusal after the device kind (02000000 "no", then empty).
  REQUIRE(hex(l.serialize()) ==
          "3451524301000000000200000003000000010000000d0000006c61796572312e776569676874050000000300000011000000000000000000000000000000000000000001000003000000000000000000e03f00000000000011c0ffffffff090000000200000002000000673105000000030000000100000000000000020000000000000003000000000000000300000000000000000000000200000000000000070000000000000001000000020000006e6f000000000000000000000000060000000000000000000000000000000000f03f000000000000f03f0000000000000000ffffffff000000000000000000000000000000000000000000000000010000000100000040000000000000000807060504030201");
  RequestList back;
  REQUIRE(RequestList::parse(l.serialize(), &back).is_ok());
  REQUIRE(back == l);
}

TEST_CASE("Every row round-trips, and its change is seen by equality and (when agreed) the signature",
          "[messages][fields]") {
  size_t rows = 0, agreed = 0, fused_alike = 0;
  for_each_request_field([&](const auto& f) {
    ++rows;
    const Request base = every_field_set();
    Request other = base;
    other.*f.member = changed(base.*f.member);
    if constexpr (std::is_same_v<typename std::decay_t<decltype(f)>::Type, DeviceKind>) {
      other.device = kCpuDevice;  // a CPU tensor: the index follows the kind
    }
    INFO("row " << rows);
    REQUIRE_FALSE(other == base);
    RequestList in, out;
    in.requests = {other};
    REQUIRE(RequestList::parse(in.serialize(), &out).is_ok());
    REQUIRE(out.requests.at(0) == other);
    REQUIRE_FALSE(out.requests.at(0) == base);
    const bool must_agree = f.agreement != Agreement::kOwn;
    agreed += must_agree;
    fused_alike += f.fused_alike;
    REQUIRE((!f.fused_alike || must_agree));  // what fused tensors share, all ranks share
    REQUIRE(same_signature(base, other) == !must_agree);
  });
  REQUIRE(rows == 17);
  REQUIRE(agreed == 13);      // all but rank, name, device index (ranks sit on different GPUs) and alltoall splits
  REQUIRE(fused_alike == 6);  // collective, dtype, op, both scale factors, device kind
}

TEST_CASE("A shape whose first dimension may vary agrees on the rest only", "[messages][fields]") {
  Request a = every_field_set();
  a.type = CollectiveType::kAllgather;
  a.shape = {2, 3};
  Request b = a;
  b.shape = {5, 3};
  REQUIRE(same_signature(a, b));
  b.shape = {2, 4};
  REQUIRE_FALSE(same_signature(a, b));
  a.type = b.type = CollectiveType::kAllreduce;
  b.shape = {5, 3};
  REQUIRE_FALSE(same_signature(a, b));
}
