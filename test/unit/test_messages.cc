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
  a.device = 3;  // a CUDA tensor on this rank's GPU 3
  a.device_kind = DeviceKind::kCuda;
  Request b;
  b.name = "";  // empty strings and shapes are legal on the wire
  b.shape = {};
  b.shape.push_back(int64_t{1} << 40);  // 64-bit dims
  in.requests = {a, b};
  in.shutdown_reason = "the GPU operations failed: cudaMemcpyAsync failed";

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
  Response on_gpu;
  on_gpu.type = ResponseType::kAllgather;
  on_gpu.names = {"g"};
  on_gpu.device_kind = DeviceKind::kCuda;
  in.responses = {fused, err, on_gpu};

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

namespace {
// A request list of one request, corrupted by `spoil`, as it arrives.
template <class F>
Status parse_spoiled_request(F&& spoil, size_t max_slots = 1024) {
  RequestList in;
  Request r;
  r.name = "w";
  r.shape = {4, 3};
  spoil(r, in);
  in.requests.insert(in.requests.begin(), r);
  RequestList out;
  return RequestList::parse(in.serialize(), &out, max_slots);
}
}  // namespace

TEST_CASE("Decoded requests with impossible values are refused, saying what is wrong", "[messages]") {
  struct Case {
    const char* expect;
    void (*spoil)(Request&, RequestList&);
  };
  const Case cases[] = {
      {"bad dimension 1 is -5", [](Request& r, RequestList&) { r.shape = {4, -5}; }},
      {"bad dimension 0 is -9223372036854775808", [](Request& r, RequestList&) { r.shape = {INT64_MIN}; }},
      {"bytes overflow 64 bits", [](Request& r, RequestList&) { r.shape = {int64_t{1} << 31, int64_t{1} << 31}; }},
      {"bytes overflow 64 bits", [](Request& r, RequestList&) { r.shape = {int64_t{1} << 61}; }},  // x 4 bytes
      {"bytes overflow 64 bits", [](Request& r, RequestList&) { r.shape = {INT64_MAX, INT64_MAX}; }},
      {"bad dtype 42", [](Request& r, RequestList&) { r.dtype = static_cast<DataType>(42); }},
      {"bad dtype -1", [](Request& r, RequestList&) { r.dtype = static_cast<DataType>(-1); }},
      {"bad reduce op 9", [](Request& r, RequestList&) { r.op = static_cast<ReduceOp>(9); }},
      {"bad collective type 8", [](Request& r, RequestList&) { r.type = static_cast<CollectiveType>(8); }},
      {"bad rank -2", [](Request& r, RequestList&) { r.rank = -2; }},
      {"bad root rank -7", [](Request& r, RequestList&) { r.root_rank = -7; }},
      {"bad device -3", [](Request& r, RequestList&) { r.device = -3; }},
      {"bad device kind 2", [](Request& r, RequestList&) { r.device_kind = static_cast<DeviceKind>(2); }},
      {"bad device kind for device 1", [](Request& r, RequestList&) { r.device = 1; }},  // a GPU, kind CPU
      {"bad device kind for device -1", [](Request& r, RequestList&) { r.device_kind = DeviceKind::kCuda; }},
      {"bad group size -1", [](Request& r, RequestList&) { r.group_size = -1; }},
      {"bad split 1 is -1", [](Request& r, RequestList&) { r.splits = {2, -1}; }},
      {"bad splits overflow 64 bits", [](Request& r, RequestList&) { r.splits = {INT64_MAX, 1}; }},
      {"bad process set rank -1", [](Request& r, RequestList&) { r.process_set_ranks = {0, -1}; }},
      {"bad process set rank 4294967296", [](Request& r, RequestList&) { r.process_set_ranks = {int64_t{1} << 32}; }},
  };
  for (const Case& c : cases) {
    INFO(c.expect);
    const Status s = parse_spoiled_request(c.spoil);
    REQUIRE_FALSE(s.is_ok());
    REQUIRE_THAT(s.message(), Catch::Contains("malformed request list (request 0 'w'") && Catch::Contains(c.expect));
  }
  // The edges that are legal: zero-sized dimensions, the CPU device, a root
  // outside the set (-1), the largest shape whose bytes fit.
  REQUIRE(parse_spoiled_request([](Request& r, RequestList&) { r.shape = {INT64_MAX, 0, INT64_MAX}; }).is_ok());
  REQUIRE(parse_spoiled_request([](Request& r, RequestList&) { r.shape = {INT64_MAX / 4}; }).is_ok());
  REQUIRE(parse_spoiled_request([](Request& r, RequestList&) {
            r.device = kCpuDevice;
            r.root_rank = -1;
          }).is_ok());
  REQUIRE(parse_spoiled_request([](Request& r, RequestList&) {
            r.device = 7;
            r.device_kind = DeviceKind::kCuda;
          }).is_ok());
}

TEST_CASE("Cache bits at or past the receiver's capacity are refused", "[messages]") {
  for (const size_t capacity : {size_t{1}, size_t{63}, size_t{64}, size_t{65}, size_t{100}, size_t{1024}}) {
    INFO("capacity " << capacity);
    const auto last = static_cast<int32_t>(capacity - 1);
    REQUIRE(parse_spoiled_request([last](Request&, RequestList& l) { l.cached.add(last); }, capacity).is_ok());
    const Status past = parse_spoiled_request([last](Request&, RequestList& l) { l.cached.add(last + 1); }, capacity);
    REQUIRE_THAT(past.message(), Catch::Contains("bad cache bits") && Catch::Contains(std::to_string(capacity)));
  }
  REQUIRE_FALSE(parse_spoiled_request([](Request&, RequestList& l) { l.cached.add(0); }, 0).is_ok());
}

TEST_CASE("Decoded responses with impossible values are refused, saying what is wrong", "[messages]") {
  struct Case {
    const char* expect;
    void (*spoil)(ResponseList&);
  };
  const Case cases[] = {
      {"bad type 9", [](ResponseList& l) { l.responses[0].type = static_cast<ResponseType>(9); }},
      {"bad cache slot -1", [](ResponseList& l) { l.responses[0].slots = {0, -1}; }},
      {"bad cache slot 64", [](ResponseList& l) { l.responses[0].slots = {64}; }},
      {"bad total bytes -8", [](ResponseList& l) { l.responses[0].total_bytes = -8; }},
      {"bad first dimension 1 is -2", [](ResponseList& l) { l.responses[0].first_dims = {1, -2}; }},
      {"bad split 0 is -3", [](ResponseList& l) { l.responses[0].splits = {-3}; }},
      {"bad last joined rank -2", [](ResponseList& l) { l.responses[0].last_joined_rank = -2; }},
      {"bad device kind 5", [](ResponseList& l) { l.responses[0].device_kind = static_cast<DeviceKind>(5); }},
      {"joined spec 0: dimension 0 is -1", [](ResponseList& l) {
         Request q;
         q.shape = {-1};
         l.responses[0].joined_specs = {q};
       }},
      {"resend 0: bad rank -1", [](ResponseList& l) { l.resend = {{-1, 0, 0}}; }},
      {"cache slot 64", [](ResponseList& l) { l.resend = {{1, 64, 0}}; }},
  };
  for (const Case& c : cases) {
    INFO(c.expect);
    ResponseList in;
    in.responses.emplace_back().names = {"g"};
    c.spoil(in);
    ResponseList out;
    const Status s = ResponseList::parse(in.serialize(), &out, 64);
    REQUIRE_FALSE(s.is_ok());
    REQUIRE_THAT(s.message(), Catch::Contains("malformed response list") && Catch::Contains(c.expect));
  }
  ResponseList edge;
  edge.responses.emplace_back().slots = {0, 63};
  edge.resend = {{2, 63, 7}};
  ResponseList out;
  REQUIRE(ResponseList::parse(edge.serialize(), &out, 64).is_ok());
  REQUIRE(out == edge);
}

TEST_CASE("Every single corrupted byte of a message parses or fails cleanly", "[messages]") {
  RequestList requests;
  Request r;
  r.name = "layer";
  r.shape = {8, 8};
  r.splits = {1, 2};
  requests.requests = {r, r};
  requests.cached.add(70);
  ResponseList responses;
  Response p;
  p.names = {"layer"};
  p.slots = {3};
  p.first_dims = {1, 2};
  p.joined_specs = {r};
  responses.responses = {p};
  responses.resend = {{1, 2, 3}};
  const std::string request_bytes = requests.serialize(), response_bytes = responses.serialize();
  for (const uint8_t flip : {uint8_t{0x01}, uint8_t{0x80}, uint8_t{0xff}}) {
    for (size_t i = 0; i < request_bytes.size(); ++i) {
      std::string b = request_bytes;
      b[i] = static_cast<char>(b[i] ^ flip);
      RequestList out;
      if (RequestList::parse(b, &out, 128).is_ok()) {
        for (const Request& q : out.requests) REQUIRE(q.num_elements() >= 0);
      }
    }
    for (size_t i = 0; i < response_bytes.size(); ++i) {
      std::string b = response_bytes;
      b[i] = static_cast<char>(b[i] ^ flip);
      ResponseList out;
      (void)ResponseList::parse(b, &out, 128);
    }
  }
}
