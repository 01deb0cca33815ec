#include "net/tcp_handshake.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <algorithm>
#include <cstring>

namespace chorus::detail {

namespace {

constexpr char kMagic[8] = {'C', 'H', 'R', 'S', 'H', 'S', '0', '1'};
// magic, Nc, purpose, size, from, to, mesh key, job id length
constexpr size_t kHelloFixedBytes = 8 + kNonceBytes + 4 + 4 + 4 + 4 + 8 + 2;
constexpr const char* kMacLabel = "chorus tcp handshake v1";

void put(std::string* out, const void* p, size_t n) { out->append(static_cast<const char*>(p), n); }

template <class T>
void put_int(std::string* out, T v) {
  const auto bits = static_cast<uint64_t>(v);
  for (size_t i = 0; i < sizeof(T); ++i) out->push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
}

template <class T>
T get_int(const char* p) {
  uint64_t v = 0;
  for (size_t i = 0; i < sizeof(T); ++i) v |= static_cast<uint64_t>(static_cast<uint8_t>(p[i])) << (8 * i);
  return static_cast<T>(v);
}

// The claim as it travels and as both proofs cover it.
void put_claim(std::string* out, const HandshakeClaim& c) {
  put_int(out, static_cast<uint32_t>(c.purpose));
  put_int(out, c.size);
  put_int(out, c.from);
  put_int(out, c.to);
  put_int(out, c.mesh_key);
  put_int(out, static_cast<uint16_t>(c.job_id.size()));
  out->append(c.job_id);
}

}  // namespace

std::string handshake_key(const std::string& secret) {
  return secret.empty() ? std::string("chorus: this job has no secret") : secret;
}

Status fresh_nonce(Nonce* out) {
  if (RAND_bytes(out->data(), static_cast<int>(out->size())) != 1) {
    return Status::unknown_error("the system's random generator failed (OpenSSL RAND_bytes)");
  }
  return Status::ok();
}

std::string encode_hello(const Nonce& nc, const HandshakeClaim& claim) {
  std::string out;
  put(&out, kMagic, sizeof kMagic);
  put(&out, nc.data(), nc.size());
  put_claim(&out, claim);
  return out;
}

Decoded decode_hello(const std::string& bytes, Nonce* nc, HandshakeClaim* claim) {
  const size_t magic_seen = std::min(bytes.size(), sizeof kMagic);
  if (std::memcmp(bytes.data(), kMagic, magic_seen) != 0) return Decoded::kBad;
  if (bytes.size() < kHelloFixedBytes) return Decoded::kNeedMore;
  const char* p = bytes.data() + sizeof kMagic;
  std::memcpy(nc->data(), p, kNonceBytes);
  p += kNonceBytes;
  const auto purpose = get_int<uint32_t>(p);
  if (purpose != static_cast<uint32_t>(HandshakePurpose::kRendezvous) &&
      purpose != static_cast<uint32_t>(HandshakePurpose::kMesh) &&
      purpose != static_cast<uint32_t>(HandshakePurpose::kElastic)) {
    return Decoded::kBad;
  }
  claim->purpose = static_cast<HandshakePurpose>(purpose);
  claim->size = get_int<int32_t>(p + 4);
  claim->from = get_int<int32_t>(p + 8);
  claim->to = get_int<int32_t>(p + 12);
  claim->mesh_key = get_int<uint64_t>(p + 16);
  const size_t job_bytes = get_int<uint16_t>(p + 24);
  if (job_bytes > kMaxJobIdBytes) return Decoded::kBad;
  if (bytes.size() < kHelloFixedBytes + job_bytes) return Decoded::kNeedMore;
  if (bytes.size() > kHelloFixedBytes + job_bytes) return Decoded::kBad;
  claim->job_id = bytes.substr(kHelloFixedBytes, job_bytes);
  return Decoded::kOk;
}

Mac handshake_mac(const std::string& key, char direction, const Nonce& nc, const Nonce& ns,
                  const HandshakeClaim& claim) {
  std::string message(kMacLabel);
  message.push_back(direction);
  put(&message, nc.data(), nc.size());
  put(&message, ns.data(), ns.size());
  put_claim(&message, claim);
  Mac mac{};
  unsigned int length = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(message.data()),
       message.size(), mac.data(), &length);
  return mac;
}

bool mac_matches(const Mac& expected, const uint8_t* got) {
  return CRYPTO_memcmp(expected.data(), got, kMacBytes) == 0;
}

Status prove_connection(int fd, const std::string& key, const HandshakeClaim& claim, Deadline deadline, bool* refused) {
  *refused = false;
  Nonce nc{}, ns{};
  Status s = fresh_nonce(&nc);
  const std::string hello = encode_hello(nc, claim);
  if (s.is_ok()) s = send_exactly(fd, hello.data(), hello.size(), deadline);
  uint8_t reply = kRefused;
  if (s.is_ok()) s = recv_exactly(fd, &reply, 1, deadline);
  if (!s.is_ok()) return Status::unknown_error("the handshake did not complete (" + s.message() + ")");
  if (reply != kChallenge) {
    *refused = true;
    return Status::precondition_error(
        "it refused this rank's claim (another job's mesh, or a rank it does not expect)");
  }
  s = recv_exactly(fd, ns.data(), ns.size(), deadline);
  const Mac proof = handshake_mac(key, 'C', nc, ns, claim);
  if (s.is_ok()) s = send_exactly(fd, proof.data(), proof.size(), deadline);
  if (s.is_ok()) s = recv_exactly(fd, &reply, 1, deadline);
  if (!s.is_ok()) return Status::unknown_error("the handshake did not complete (" + s.message() + ")");
  *refused = true;
  if (reply != kAccepted) {
    return Status::precondition_error(
        "it refused this rank's proof of the job's secret (CHORUS_SECRET or CHORUS_SECRET_FILE differs between "
        "the ranks, or is set on some only)");
  }
  uint8_t theirs[kMacBytes];
  s = recv_exactly(fd, theirs, sizeof theirs, deadline);
  if (!s.is_ok()) return Status::unknown_error("the handshake did not complete (" + s.message() + ")");
  if (!mac_matches(handshake_mac(key, 'S', nc, ns, claim), theirs)) {
    return Status::precondition_error("it failed its own proof of the job's secret: not a rank of this job");
  }
  return Status::ok();
}

}  // namespace chorus::detail
