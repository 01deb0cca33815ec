// Fuzz target: the rendezvous of a job of fixed size (rendezvous/
// tcp_rendezvous_wire.h): a rank's hello as rank 0 reads it, and rank 0's
// answer as a rank reads it (the first byte picks; for the answer the
// second byte is the job's size, 1-16). Whatever is accepted has its
// numbers in range, exactly `size` peers, and comes back unchanged through
// its encoder; an error keeps rank 0's text.
#include <cstdint>

#include "rendezvous/tcp_rendezvous_wire.h"
#include "fuzz_check.h"

using namespace chorus;
using namespace chorus::detail;

namespace {

void hello(const std::string& text) {
  RendezvousHello h;
  if (!decode_rendezvous_hello(text, &h).is_ok()) return;
  FUZZ_CHECK(h.rank >= 0 && h.size >= 1 && h.port >= 1 && h.port <= 65535);
  RendezvousHello again;
  FUZZ_CHECK(decode_rendezvous_hello(encode_rendezvous_hello(h), &again).is_ok());
  FUZZ_CHECK(again.rank == h.rank && again.size == h.size && again.port == h.port && again.job_id == h.job_id &&
             again.host_id == h.host_id);
}

void world(const std::string& text, int size) {
  uint64_t key = 0;
  std::vector<TcpPeerInfo> peers;
  const Status s = decode_rendezvous_world(text, size, &key, &peers);
  if (s.code() == StatusCode::kAborted) {
    FUZZ_CHECK(!s.message().empty());
    uint64_t k2 = 0;
    std::vector<TcpPeerInfo> p2;
    FUZZ_CHECK(decode_rendezvous_world(encode_rendezvous_error(s.message()), size, &k2, &p2).message() == s.message());
    return;
  }
  if (!s.is_ok()) return;
  FUZZ_CHECK(peers.size() == static_cast<size_t>(size));
  for (const TcpPeerInfo& p : peers) FUZZ_CHECK(p.port >= 0 && p.port <= 65535);
  uint64_t key_again = 0;
  std::vector<TcpPeerInfo> again;
  FUZZ_CHECK(decode_rendezvous_world(encode_rendezvous_world(peers, key), size, &key_again, &again).is_ok());
  FUZZ_CHECK(key_again == key && again.size() == peers.size());
  for (size_t i = 0; i < peers.size(); ++i) {
    FUZZ_CHECK(again[i].host_id == peers[i].host_id && again[i].address == peers[i].address &&
               again[i].port == peers[i].port);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, size_t size) {
  if (size < 2) return 0;
  if (data[0] % 2 == 0) {
    hello(fuzz_bytes(data + 1, size - 1));
  } else {
    world(fuzz_bytes(data + 2, size - 2), 1 + data[1] % 16);
  }
  return 0;
}
