// Writes the fuzzers' seed corpus with the real encoders: valid request
// lists, response lists and cache-bit vectors covering every collective,
// cached slots at word edges, errors, joined specs and resends; the elastic
// wire's, the handshake's, the rendezvous's and the gone notice's messages;
// etcd's answers. A selector byte (and for some a size) comes first
// where the target reads it (see each fuzz_*.cc). Usage: seed_corpus
// OUT_DIR (writes one folder per target under OUT_DIR).
#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "comm/tcp/tcp_gone_notice.h"
#include "negotiation/messages.h"
#include "net/tcp_handshake.h"
#include "rendezvous/elastic_wire.h"
#include "rendezvous/etcd_json.h"
#include "rendezvous/tcp_rendezvous_wire.h"

using namespace chorus;
using namespace chorus::detail;

namespace {

bool write(const std::string& dir, int index, const std::string& bytes) {
  ::mkdir(dir.c_str(), 0755);
  std::ofstream f(dir + "/seed_" + std::to_string(index), std::ios::binary);
  f << bytes;
  return static_cast<bool>(f);
}

std::vector<Request> sample_requests() {
  std::vector<Request> out;
  for (int32_t t = 0; t <= kLastCollectiveType; ++t) {
    Request r;
    r.rank = t % 3;
    r.type = static_cast<CollectiveType>(t);
    r.name = "tensor." + std::to_string(t);
    r.dtype = static_cast<DataType>(t % 10);  // every dtype
    r.shape = t % 2 == 0 ? std::vector<int64_t>{3, 5} : std::vector<int64_t>{0, 1 << 20};
    r.op = static_cast<ReduceOp>(t % 5);
    r.prescale = 0.5;
    r.root_rank = t == 1 ? 2 : 0;
    r.group = t == 0 ? "group" : "";
    r.group_size = t == 0 ? 2 : 0;
    if (r.type == CollectiveType::kAlltoall) r.splits = {1, 2, 0};
    if (r.type == CollectiveType::kAddProcessSet) r.process_set_ranks = {0, 2};
    if (r.type == CollectiveType::kAllgather) r.refused = "allgather of tensor 'tensor.2': a scalar cannot be gathered";
    out.push_back(r);
  }
  return out;
}

std::vector<std::string> request_lists() {
  std::vector<std::string> out;
  out.push_back(RequestList().serialize());
  RequestList all;
  all.requests = sample_requests();
  out.push_back(all.serialize());
  RequestList cached;
  for (int32_t slot : {0, 1, 63, 64, 99}) cached.cached.add(slot);
  cached.cache_epoch = 7;
  cached.requests = {sample_requests()[0]};
  out.push_back(cached.serialize());
  RequestList leaving;
  leaving.shutdown = true;
  out.push_back(leaving.serialize());
  return out;
}

std::vector<std::string> response_lists() {
  std::vector<std::string> out;
  out.push_back(ResponseList().serialize());
  ResponseList list;
  list.cache_epoch = 3;
  Response fused;
  fused.names = {"a", "b"};
  fused.total_bytes = 4096;
  Response by_slot;
  by_slot.slots = {0, 64, 99};
  Response gather;
  gather.type = ResponseType::kAllgather;
  gather.names = {"g"};
  gather.first_dims = {1, 2, 3};
  Response all_to_all;
  all_to_all.type = ResponseType::kAlltoall;
  all_to_all.names = {"x"};
  all_to_all.splits = {1, 0, 2, 2};
  Response joined;
  joined.names = {"j"};
  joined.joined_specs = {sample_requests()[0]};
  joined.last_joined_rank = 1;
  Response error;
  error.type = ResponseType::kError;
  error.names = {"e"};
  error.error_message = "Mismatched allreduce of tensor 'e'";
  list.responses = {fused, by_slot, gather, all_to_all, joined, error};
  list.resend = {{1, 5, 2}};
  out.push_back(list.serialize());
  ResponseList stop;
  stop.shutdown = true;
  stop.shutdown_reason = "rank 1 called shutdown()";
  out.push_back(stop.serialize());
  return out;
}

// Two bytes of capacity, then the encoded vector.
std::vector<std::string> slot_bit_vectors() {
  std::vector<std::string> out;
  for (const auto& [capacity, slots] : std::vector<std::pair<uint16_t, std::vector<int32_t>>>{
           {100, {}}, {100, {0, 63, 64, 99}}, {64, {63}}, {1024, {5, 700, 1023}}}) {
    SlotBits bits;
    for (int32_t s : slots) bits.add(s);
    WireWriter w;
    w.put(capacity);
    bits.write(w);
    out.push_back(w.take());
  }
  return out;
}

std::string with(char selector, const std::string& bytes) { return std::string(1, selector) + bytes; }

ElasticWorld sample_world() {
  ElasticWorld w;
  w.version = 3;
  w.rank = 1;
  w.key = 18446744073709551615ull;
  w.hosts_generation = 2;
  w.job_id = "job-7.3";
  w.peers = {{"hostA", "10.0.0.1", 40001}, {"hostB", "::1", 65535}, {"hostA", "10.0.0.1", 1}};
  return w;
}

std::vector<std::string> elastic_wire() {
  const ElasticJoin join{"hostA:0", "hostA", 40001};
  const ElasticWorld world = sample_world();
  return {with(0, encode_join(join)),
          with(1, encode_world(world)),
          with(1, encode_error("no world: 1 member of min_np 2 after 600 s")),
          with(1, encode_hosts({5, kHostsAdded | kHostsRemoved})),
          with(2, encode_etcd_member({join, "10.0.0.1", 2})),
          with(3, encode_etcd_world(world, {"hostA:0", "hostB:0", "hostA:1"}))};
}

std::vector<std::string> handshakes() {
  Nonce nc{};
  for (size_t i = 0; i < nc.size(); ++i) nc[i] = static_cast<uint8_t>(i * 7);
  return {encode_hello(nc, {HandshakePurpose::kRendezvous, 4, 2, 0, 0, "job"}),
          encode_hello(nc, {HandshakePurpose::kMesh, 3, 2, 1, 0x1234567890abcdefull, std::string(200, 'j')}),
          encode_hello(nc, {HandshakePurpose::kElastic, 0, -1, -1, 0, ""})};
}

std::vector<std::string> rendezvous() {
  const std::vector<TcpPeerInfo> peers = {{"hostA", "10.0.0.1", 0}, {"hostB", "10.0.0.2", 40002}, {"", "", 7}};
  std::string three = {1, 2};  // the answer, for 3 ranks
  std::string two = {1, 1};
  return {with(0, encode_rendezvous_hello({2, 3, 40002, "job", "hostB"})),
          with(0, encode_rendezvous_hello({1, 2, 1, "", ""})), three + encode_rendezvous_world(peers, 42),
          two + encode_rendezvous_world({peers[0], peers[1]}, 0),
          two + encode_rendezvous_error("rank 1 was claimed twice")};
}

std::vector<std::string> gone_notices() {
  return {std::string{4, 0} + encode_gone_notice({1, 3}, "rank 1 closed it"),
          std::string{64, 63} + encode_gone_notice({0}, ""), std::string{2, 1} + encode_gone_notice({}, "nothing")};
}

std::vector<std::string> etcd_responses() {
  const std::string range = "{\"header\":{\"revision\":\"12\"},\"kvs\":[{\"key\":\"" +
                            base64_encode("/chorus/job/world") + "\",\"value\":\"" + base64_encode("members\ta") +
                            "\",\"create_revision\":\"3\"," +
                            "\"mod_revision\":\"9\",\"lease\":\"7587\"}],\"count\":\"1\",\"more\":false," +
                            "\"x\":[null,true,-1.5e3,\"\\u00e9\\ud83d\\ude00\"]}";
  return {with(0, range),
          with(0, "{\"result\":{\"header\":{\"revision\":\"4\"},\"ID\":\"7587\",\"TTL\":\"5\"}}\n"),
          with(0, "{\"header\":{\"revision\":\"5\"},\"succeeded\":true,\"token\":\"abc.17\"}"),
          with(0, "{\"error\":\"etcdserver: invalid auth token\",\"code\":16,\"message\":\"x\"}"),
          with(1, "https://10.0.0.1:2379, http://[::1]:12379,etcd.example"),
          with(2, base64_encode(std::string("\0\xff\x10 etcd", 8)))};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: seed_corpus OUT_DIR\n");
    return 2;
  }
  const std::string root = argv[1];
  ::mkdir(root.c_str(), 0755);
  bool ok = true;
  const std::vector<std::pair<std::string, std::vector<std::string>>> sets = {
      {"request_list", request_lists()}, {"response_list", response_lists()}, {"slot_bits", slot_bit_vectors()},
      {"elastic_wire", elastic_wire()},  {"handshake", handshakes()},         {"rendezvous", rendezvous()},
      {"mesh_frames", gone_notices()},   {"etcd_response", etcd_responses()}};
  for (const auto& [name, seeds] : sets) {
    for (size_t i = 0; i < seeds.size(); ++i) ok = write(root + "/" + name, static_cast<int>(i), seeds[i]) && ok;
  }
  if (!ok) std::fprintf(stderr, "seed_corpus: cannot write under %s\n", root.c_str());
  return ok ? 0 : 1;
}
