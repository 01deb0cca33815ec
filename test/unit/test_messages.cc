// Wire round trips of the control messages.
#include <catch2/catch.hpp>

#include "negotiation/messages.h"

using namespace chorus;
using namespace chorus::detail;

TEST_CASE("RequestList survives a serialize/parse round trip", "[messages]") {
  RequestList in;
  in.shutdown = true;
  Request a;
  a.rank = 3;
  a.type = CollectiveType::kBroadcast;
  a.name = "layer1.weight";
  a.dtype = DataType::kBFloat16;
  a.shape = {17, 17, 17};
  a.op = ReduceOp::kMax;
  a.prescale = 0.5;
  a.postscale = 4.0;
  a.root_rank = 2;
  a.group = "g";
  a.group_size = 5;
  Request b;
  b.name = "";  // empty strings and shapes are legal on the wire
  b.shape = {};
  b.shape.push_back(int64_t{1} << 40);  // 64-bit dims
  in.requests = {a, b};

  RequestList out;
  REQUIRE(RequestList::parse(in.serialize(), &out).is_ok());
  REQUIRE(out == in);
}

TEST_CASE("ResponseList survives a serialize/parse round trip", "[messages]") {
  ResponseList in;
  in.shutdown = true;
  in.shutdown_reason = "rank 2 called shutdown()";
  Response fused;
  fused.type = ResponseType::kAllreduce;
  fused.names = {"a", "b", "c"};
  fused.total_bytes = int64_t{3} << 33;
  Response err;
  err.type = ResponseType::kError;
  err.names = {"x"};
  err.error_message = "Mismatched allreduce of tensor 'x': dtype differs";
  in.responses = {fused, err};

  ResponseList out;
  REQUIRE(ResponseList::parse(in.serialize(), &out).is_ok());
  REQUIRE(out == in);
}

TEST_CASE("Truncated or foreign bytes are rejected, not misread", "[messages]") {
  RequestList in;
  Request r;
  r.name = "w";
  r.shape = {4};
  in.requests = {r};
  const std::string bytes = in.serialize();
  RequestList out;
  for (size_t cut = 0; cut < bytes.size(); ++cut) {
    INFO("cut at " << cut);
    REQUIRE_FALSE(RequestList::parse(bytes.substr(0, cut), &out).is_ok());
  }
  REQUIRE_FALSE(RequestList::parse(bytes + "x", &out).is_ok());
  ResponseList resp;
  REQUIRE_FALSE(ResponseList::parse(bytes, &resp).is_ok());  // a request is no response
}
