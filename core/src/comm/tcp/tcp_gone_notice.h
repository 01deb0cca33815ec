#pragma once
// The last words of a rank whose mesh failed (TcpChannel::kGone, comm/tcp/
// tcp_mesh.h): which ranks it lost and why, so that the ranks still
// connected name those ranks, not the one that told them. Payload: a
// uint32 count, that many int32 ranks, then the reason's text. Pure
// functions: unit-tested and fuzzed (test/fuzz/fuzz_mesh_frames.cc).

#include <cstdint>
#include <string>
#include <vector>

namespace chorus::detail {

struct GoneNotice {
  std::vector<int> lost;  // ranks of the mesh, each once, never the reader
  std::string why;        // at most kLongestGoneReason bytes
};

constexpr size_t kLongestGoneReason = 512;

std::string encode_gone_notice(const std::vector<int>& lost, const std::string& why);
/// What a mesh of `size` ranks tells rank `self`. A malformed payload (a
/// count past its end) names no rank and no reason; ranks outside the mesh,
/// repeated, or the reader's own are dropped.
GoneNotice decode_gone_notice(const std::string& payload, int size, int self);

}  // namespace chorus::detail
