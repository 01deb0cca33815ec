// Writes the fuzzers' seed corpus with the real encoders: valid request
// lists, response lists and cache-bit vectors covering every collective,
// cached slots at word edges, errors, joined specs and resends. Usage:
// seed_corpus OUT_DIR (writes OUT_DIR/{request_list,response_list,slot_bits}/).
#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "negotiation/messages.h"

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
      {"request_list", request_lists()}, {"response_list", response_lists()}, {"slot_bits", slot_bit_vectors()}};
  for (const auto& [name, seeds] : sets) {
    for (size_t i = 0; i < seeds.size(); ++i) ok = write(root + "/" + name, static_cast<int>(i), seeds[i]) && ok;
  }
  if (!ok) std::fprintf(stderr, "seed_corpus: cannot write under %s\n", root.c_str());
  return ok ? 0 : 1;
}
