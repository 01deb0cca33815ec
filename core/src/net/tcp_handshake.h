#pragma once
// The proof that opens every TCP connection of a job (rendezvous, mesh,
// process sets' meshes): a mutual challenge-response over the job's secret.
//
//   connector -> acceptor   hello: magic, nonce Nc, the claim (purpose, job
//                           size, rank claimed, rank reached, mesh key, job id)
//   acceptor  -> connector  challenge: kChallenge, nonce Ns (or kRefused)
//   connector -> acceptor   proof: HMAC-SHA256(secret, "C", Nc, Ns, claim)
//   acceptor  -> connector  kAccepted + HMAC-SHA256(secret, "S", Nc, Ns, claim),
//                           or kRefused, and the connection closes
//
// Both nonces are fresh per connection, so a recorded handshake fails
// against a new challenge; the direction byte keeps one side's proof from
// serving as the other's; the connector proves first and a refusal says
// nothing more, so a stranger learns nothing. The pure functions build and
// check the messages (test/unit/test_tcp_handshake.cc); libcrypto computes.

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "chorus/status.h"
#include "net/tcp_socket.h"

namespace chorus::detail {

constexpr size_t kNonceBytes = 32;
constexpr size_t kMacBytes = 32;
constexpr size_t kMaxJobIdBytes = 1024;
using Nonce = std::array<uint8_t, kNonceBytes>;
using Mac = std::array<uint8_t, kMacBytes>;

/// kElastic: a member of an elastic job reaching its rendezvous (rendezvous/elastic_member.h).
enum class HandshakePurpose : uint32_t { kRendezvous = 1, kMesh = 2, kElastic = 3 };
/// The acceptor's first byte: a challenge follows, or a refusal ends it.
enum HandshakeReply : uint8_t { kRefused = 0, kChallenge = 1, kAccepted = 2 };

/// Who a connection says it is; every field goes into both proofs.
struct HandshakeClaim {
  HandshakePurpose purpose = HandshakePurpose::kRendezvous;
  int32_t size = 0;
  int32_t from = -1;      // the connecting rank
  int32_t to = -1;        // the rank it reaches (0 at the rendezvous)
  uint64_t mesh_key = 0;  // the mesh's, handed out by rank 0 (0 at the rendezvous)
  std::string job_id;
};

/// How this rank proves itself and judges others.
struct TcpAuth {
  std::string secret;  // the job's ("" none: rendezvous/tcp_secret.h)
  double handshake_timeout_seconds = 3.0;
  /// A refused connection, once per address (nullptr: not reported).
  std::function<void(const std::string&)> report;
};

/// The key both ends compute with: the job's secret, or a fixed public one
/// when the job has none (the handshake still runs; it then proves nothing).
std::string handshake_key(const std::string& secret);

/// 32 bytes from the system's CSPRNG (RAND_bytes); an error if it fails.
Status fresh_nonce(Nonce* out);

std::string encode_hello(const Nonce& nc, const HandshakeClaim& claim);
enum class Decoded { kNeedMore, kBad, kOk };
/// The hello in `bytes`: kNeedMore until it is whole, kBad when it is not
/// one (wrong magic, a job id too long, bytes after it: the connector waits
/// for the challenge before it sends more).
Decoded decode_hello(const std::string& bytes, Nonce* nc, HandshakeClaim* claim);

/// HMAC-SHA256 with `key` over the direction ('C': the connector's proof,
/// 'S': the acceptor's), both nonces and the claim.
Mac handshake_mac(const std::string& key, char direction, const Nonce& nc, const Nonce& ns,
                  const HandshakeClaim& claim);
/// Constant time (CRYPTO_memcmp): `got` holds kMacBytes.
bool mac_matches(const Mac& expected, const uint8_t* got);

/// The connector's side on connected socket `fd`, bounded by `deadline`.
/// An error says why: refused (`*refused` true: the acceptor judged this
/// rank's proof or claim), or the acceptor failed its own proof, or the
/// connection closed or timed out before the acceptor spoke (`*refused`
/// false: worth a new connection).
Status prove_connection(int fd, const std::string& key, const HandshakeClaim& claim, Deadline deadline, bool* refused);

}  // namespace chorus::detail
