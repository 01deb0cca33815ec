#include "rendezvous/tcp_rendezvous_wire.h"

#include <climits>
#include <sstream>

#include "common/number_text.h"

namespace chorus::detail {

namespace {

constexpr const char* kHelloMagic = "chorus-tcp-1";

}  // namespace

std::string encode_rendezvous_hello(const RendezvousHello& hello) {
  return std::string(kHelloMagic) + "\n" + std::to_string(hello.rank) + "\n" + std::to_string(hello.size) + "\n" +
         std::to_string(hello.port) + "\n" + hello.job_id + "\n" + hello.host_id;
}

Status decode_rendezvous_hello(const std::string& text, RendezvousHello* out) {
  std::istringstream in(text);
  std::string magic, rank, size, port;
  int64_t r = 0, n = 0, p = 0;
  const bool ok = std::getline(in, magic) && magic == kHelloMagic && std::getline(in, rank) && std::getline(in, size) &&
                  std::getline(in, port) && std::getline(in, out->job_id) && whole_number(rank, 0, INT32_MAX, &r) &&
                  whole_number(size, 1, INT32_MAX, &n) && whole_number(port, 1, 65535, &p);
  if (!ok) return Status::invalid_argument("not a rendezvous hello of this Chorus build");
  if (!std::getline(in, out->host_id)) out->host_id.clear();  // an empty last line
  out->rank = static_cast<int>(r);
  out->size = static_cast<int>(n);
  out->port = static_cast<int>(p);
  return Status::ok();
}

std::string encode_rendezvous_world(const std::vector<TcpPeerInfo>& peers, uint64_t key) {
  std::string out = "ok\n" + std::to_string(key) + "\n";
  for (const TcpPeerInfo& p : peers) out += p.host_id + "\t" + p.address + "\t" + std::to_string(p.port) + "\n";
  return out;
}

std::string encode_rendezvous_error(const std::string& why) { return "error\n" + why; }

Status decode_rendezvous_world(const std::string& text, int size, uint64_t* key, std::vector<TcpPeerInfo>* peers) {
  std::istringstream in(text);
  std::string line;
  std::getline(in, line);
  if (line == "error") return Status::aborted(text.size() > 6 ? text.substr(6) : "no reason given");
  const Status garbage = Status::unknown_error("rank 0 answered the rendezvous with garbage");
  if (line != "ok" || !std::getline(in, line) || !whole_unsigned(line, key)) return garbage;
  peers->assign(static_cast<size_t>(size), {});
  for (TcpPeerInfo& p : *peers) {
    std::string port;
    int64_t number = 0;
    if (!std::getline(in, line)) {
      return Status::unknown_error("rank 0's world lists fewer than " + std::to_string(size) + " ranks");
    }
    std::istringstream fields(line);
    if (!std::getline(fields, p.host_id, '\t') || !std::getline(fields, p.address, '\t') ||
        !std::getline(fields, port) || !whole_number(port, 0, 65535, &number)) {
      return garbage;
    }
    p.port = static_cast<int>(number);
  }
  if (in.peek() != std::char_traits<char>::eof()) {
    return Status::unknown_error("rank 0's world lists more than " + std::to_string(size) + " ranks");
  }
  return Status::ok();
}

}  // namespace chorus::detail
