// Large transfers over the TCP mesh land in the callers' memory, not in a
// copy the mesh keeps: the mesh stops reading after a frame nobody waited
// for (a control message), and the ring posts its allgather receives while
// the reduce-scatter still runs (bytes_kept_aside() counts the copies).
#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include "comm/tcp/tcp_mesh.h"
#include "comm/tcp/tcp_peer_link.h"
#include "dataplane/algorithms/ring_allreduce.h"
#include "rendezvous/tcp_rendezvous.h"
#include "tcp_job.h"
#include "thread_ranks.h"

using namespace chorus;
using namespace chorus::detail;

namespace {

// Two ranks as threads, each with a mesh to the other over loopback.
std::vector<std::unique_ptr<TcpMesh>> two_meshes() {
  auto meshes = test::tcp_meshes(2);
  REQUIRE(meshes.size() == 2);
  return meshes;
}

}  // namespace

TEST_CASE("A control message is taken before the transfer behind it is read", "[tcp][mesh]") {
  auto meshes = two_meshes();
  const size_t bytes = size_t{1} << 20;
  std::vector<char> sent(bytes, 3), got(bytes, 0);
  const std::vector<Status> outcomes = test::on_thread_ranks<Status>(2, [&](int rank) {
    TcpMesh& mesh = *meshes[static_cast<size_t>(rank)];
    TcpMesh::Ticket ticket = 0;
    if (rank == 1) {  // "start now", then the data, at once
      Status s = mesh.send_owned(0, TcpChannel::kControl, 0, std::make_shared<const std::string>("go"));
      if (s.is_ok()) s = mesh.send(0, TcpChannel::kRing, 9, sent.data(), static_cast<int64_t>(bytes), &ticket);
      return s.is_ok() ? mesh.wait(ticket) : s;
    }
    std::string message;
    while (!mesh.take_control(nullptr, &message)) mesh.progress(100);
    Status s = mesh.receive(1, TcpChannel::kRing, 9, got.data(), static_cast<int64_t>(bytes), &ticket);
    return s.is_ok() ? mesh.wait(ticket) : s;
  });
  for (const Status& s : outcomes) REQUIRE(s.is_ok());
  REQUIRE(got == sent);
  REQUIRE(meshes[0]->bytes_kept_aside() == 0);
}

TEST_CASE("The ring over TCP receives every segment in place", "[tcp][mesh][ring]") {
  auto meshes = two_meshes();
  const int64_t count = int64_t{2} << 20;  // 8 MiB of float32, 256 KiB segments
  const std::vector<int64_t> wrong = test::on_thread_ranks<int64_t>(2, [&](int rank) {
    TcpPeerLink link(*meshes[static_cast<size_t>(rank)]);
    std::vector<float> in(static_cast<size_t>(count)), out(in.size(), 0.0f);
    for (int64_t i = 0; i < count; ++i) in[static_cast<size_t>(i)] = static_cast<float>(i % 5 + rank);
    std::vector<char> scratch(static_cast<size_t>(ring_scratch_bytes(count, DataType::kFloat32, 2)));
    RingOptions options;
    options.segment_bytes = 256 << 10;
    Status s = ring_allreduce(link, in.data(), out.data(), count, DataType::kFloat32, ReduceOp::kSum, scratch.data(),
                              options);
    int64_t bad = s.is_ok() ? 0 : count;
    for (int64_t i = 0; i < count; ++i) bad += out[static_cast<size_t>(i)] != static_cast<float>(2 * (i % 5) + 1);
    return bad;
  });
  REQUIRE(wrong[0] + wrong[1] == 0);
  REQUIRE(meshes[0]->bytes_kept_aside() == 0);
  REQUIRE(meshes[1]->bytes_kept_aside() == 0);
}
