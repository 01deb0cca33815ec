#pragma once
// What a rank and rank 0 say at the rendezvous of a job of fixed size
// (rendezvous/tcp_rendezvous.h), once the handshake proved the connection:
// the rank's hello (rank, job size, job id, host id, the port of its mesh
// listener) and rank 0's answer, the world (a key, then per rank: host id,
// address, port) or an error for everyone. Text, one length-prefixed frame
// each (net/tcp_wire.h). Pure functions: unit-tested and fuzzed
// (test/fuzz/fuzz_rendezvous.cc); numbers are read whole and in range.

#include <cstdint>
#include <string>
#include <vector>

#include "chorus/status.h"

namespace chorus::detail {

struct TcpPeerInfo {
  std::string host_id;  // ranks with the same one share memory
  std::string address;  // where the others reach its listener
  int port = 0;         // 0: none (rank 0 of a fixed job: every rank reached it at the rendezvous)
};

struct RendezvousHello {
  int rank = -1;
  int size = -1;
  int port = 0;  // the rank's mesh listener: 1..65535
  std::string job_id;
  std::string host_id;
};

std::string encode_rendezvous_hello(const RendezvousHello& hello);
/// An invalid argument for anything that is not a hello of this build.
Status decode_rendezvous_hello(const std::string& text, RendezvousHello* out);

std::string encode_rendezvous_world(const std::vector<TcpPeerInfo>& peers, uint64_t key);
std::string encode_rendezvous_error(const std::string& why);
/// Rank 0's answer for a job of `size` ranks: the world's key and peers;
/// an error rank 0 sent is returned as aborted with its text; anything
/// else (garbage, too few or too many ranks) as an unknown error.
Status decode_rendezvous_world(const std::string& text, int size, uint64_t* key, std::vector<TcpPeerInfo>* peers);

}  // namespace chorus::detail
