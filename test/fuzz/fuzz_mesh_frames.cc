// Fuzz target: the gone notice (comm/tcp/tcp_gone_notice.h), the last
// words a failing rank sends every rank still connected. The first byte is
// the mesh's size (1-64), the second the reader's rank; the rest the
// payload. Whatever it names is a rank of the mesh, each once, never the
// reader; the reason is bounded; a notice it encodes reads back the same.
#include <algorithm>
#include <cstdint>

#include "comm/tcp/tcp_gone_notice.h"
#include "fuzz_check.h"

using namespace chorus::detail;

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, size_t size) {
  if (size < 2) return 0;
  const int mesh_size = 1 + data[0] % 64;
  const int self = data[1] % mesh_size;
  const GoneNotice notice = decode_gone_notice(fuzz_bytes(data + 2, size - 2), mesh_size, self);
  for (size_t i = 0; i < notice.lost.size(); ++i) {
    const int r = notice.lost[i];
    FUZZ_CHECK(r >= 0 && r < mesh_size && r != self);
    FUZZ_CHECK(std::count(notice.lost.begin(), notice.lost.end(), r) == 1);
  }
  FUZZ_CHECK(notice.why.size() <= kLongestGoneReason);
  if (notice.lost.empty()) return 0;
  const GoneNotice again = decode_gone_notice(encode_gone_notice(notice.lost, notice.why), mesh_size, self);
  FUZZ_CHECK(again.lost == notice.lost && again.why == notice.why);
  return 0;
}
