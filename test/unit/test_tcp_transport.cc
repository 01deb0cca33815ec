// The TCP transport (comm/tcp) with ranks as threads over real loopback
// connections: results at 2, 3 and 4 ranks through each route, the
// rendezvous's errors, a dead peer, and reading the job from the environment.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "chorus/chorus.h"
#include "env_guard.h"
#include "comm/backend_choice.h"
#include "rendezvous/tcp_job_env.h"
#include "comm/tcp/tcp_mesh.h"
#include "rendezvous/tcp_rendezvous.h"
#include "loopback_job.h"
#include "tcp_job.h"
#include "thread_ranks.h"

using namespace chorus;
using chorus::test::run_tcp_ranks;

namespace {

using test::EnvGuard;

RuntimeOptions with_algorithm(AllreduceAlgorithm algorithm) {
  RuntimeOptions o = test::quiet_options();
  o.allreduce_algorithm = algorithm;
  o.ring_segment_bytes = 4096;
  return o;
}

detail::TcpJobSpec spec_of(int rank, int size, int port, double) { return test::tcp_spec(rank, size, port); }

}  // namespace

TEST_CASE("Allreduce over TCP: exact sums at 2, 3 and 4 ranks through every route", "[tcp]") {
  for (AllreduceAlgorithm algorithm : {AllreduceAlgorithm::kAuto, AllreduceAlgorithm::kRing, AllreduceAlgorithm::kMpi}) {
    for (int size : {2, 3, 4}) {
      run_tcp_ranks(size, [size](Runtime& rt, int rank) {
        RANK_CHECK(rt.size() == size && rt.rank() == rank && rt.local_size() == size);
        for (int64_t n : {int64_t{1}, int64_t{1000}, int64_t{300001}}) {  // direct, split, ring-sized
          std::vector<double> v(static_cast<size_t>(n));
          for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<double>(rank * 7 + i % 13);
          auto t = std::make_shared<HostTensorView>(v.data(), DataType::kFloat64, TensorShape{n});
          AllreduceOptions sum;
          sum.op = ReduceOp::kSum;
          rt.allreduce_async("t" + std::to_string(n), t, t, sum).wait();
          for (int64_t i = 0; i < n; ++i) {
            RANK_CHECK(v[static_cast<size_t>(i)] == 7.0 * size * (size - 1) / 2 + static_cast<double>(size * (i % 13)));
          }
        }
      }, with_algorithm(algorithm));
    }
  }
}

TEST_CASE("A rendezvous that misses a rank fails on every rank that came, naming it", "[tcp][rendezvous]") {
  const int port = test::free_tcp_port();
  const auto start = std::chrono::steady_clock::now();
  const std::vector<Status> outcomes = test::on_thread_ranks<Status>(2, [&](int rank) {
    detail::TcpWorld world;
    return detail::tcp_rendezvous(spec_of(rank, 3, port, 1.0), 1.0, &world);
  });
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (const Status& s : outcomes) {
    REQUIRE_FALSE(s.is_ok());
    REQUIRE_THAT(s.message(), Catch::Contains("rank 2 never came") && Catch::Contains("2 of 3 ranks arrived"));
  }
  REQUIRE(took < 5.0);
}

TEST_CASE("A peer whose process ends is named at once by every other rank", "[tcp][dead_peer]") {
  const int port = test::free_tcp_port();
  std::vector<std::unique_ptr<detail::TcpMesh>> meshes(3);
  const std::vector<Status> met = test::on_thread_ranks<Status>(3, [&](int rank) {
    detail::TcpWorld world;
    Status s = detail::tcp_rendezvous(spec_of(rank, 3, port, 10.0), 10.0, &world);
    if (s.is_ok()) meshes[static_cast<size_t>(rank)] = std::make_unique<detail::TcpMesh>(rank, std::move(world.links), 30);
    return s;
  });
  for (const Status& s : met) REQUIRE(s.is_ok());
  meshes[2].reset();  // rank 2's process is gone: its connections close
  const std::vector<Status> waited = test::on_thread_ranks<Status>(2, [&](int rank) {
    char byte = 0;
    detail::TcpMesh::Ticket ticket = 0;
    Status s = meshes[static_cast<size_t>(rank)]->receive(2, detail::TcpChannel::kCollective, 0, &byte, 1, &ticket);
    return s.is_ok() ? meshes[static_cast<size_t>(rank)]->wait(ticket) : s;
  });
  for (int rank = 0; rank < 2; ++rank) {
    const Status& s = waited[static_cast<size_t>(rank)];
    REQUIRE(s.code() == StatusCode::kAborted);
    REQUIRE_THAT(s.message(), Catch::Contains("rank " + std::to_string(rank) + " lost its connection") &&
                                  Catch::Contains("rank 2 closed it"));
    REQUIRE(meshes[static_cast<size_t>(rank)]->failure().message() == s.message());  // it stays broken
  }
}

TEST_CASE("The job comes from CHORUS_*, else torchrun's, else Slurm's variables", "[tcp][env]") {
  detail::TcpJobSpec spec;
  SECTION("nothing set: a job of one rank") {
    REQUIRE(detail::tcp_job_from_environment(&spec).is_ok());
    REQUIRE((spec.rank == 0 && spec.size == 1));
  }
  SECTION("torchrun") {
    EnvGuard env;
    env.set("RANK", "2");
    env.set("WORLD_SIZE", "4");
    env.set("LOCAL_RANK", "0");
    env.set("MASTER_ADDR", "node7");
    env.set("MASTER_PORT", "29500");
    env.set("TORCHELASTIC_RUN_ID", "run1");
    REQUIRE(detail::tcp_job_from_environment(&spec).is_ok());
    REQUIRE((spec.rank == 2 && spec.size == 4 && spec.local_rank == 0 && spec.master_addr == "node7" &&
             spec.master_port == 29500 && spec.job_id == "run1"));
    // Under torchrun itself its agent serves a store on MASTER_PORT: the next port.
    env.set("TORCHELASTIC_USE_AGENT_STORE", "True");
    REQUIRE(detail::tcp_job_from_environment(&spec).is_ok());
    CHECK(spec.master_port == 29501);
    CHECK_THAT(spec.port_var, Catch::Contains("torchrun's agent store"));
    env.set("TORCHELASTIC_USE_AGENT_STORE", "False");
    REQUIRE(detail::tcp_job_from_environment(&spec).is_ok());
    CHECK(spec.master_port == 29500);
    env.set("TORCHELASTIC_USE_AGENT_STORE", "True");
    env.set("CHORUS_MASTER_PORT", "4000");  // Chorus's own name is taken as given
    REQUIRE(detail::tcp_job_from_environment(&spec).is_ok());
    CHECK(spec.master_port == 4000);
  }
  SECTION("Slurm, rank 0 on the job's first host, a port from the job id; CHORUS_ names win") {
    EnvGuard env;
    env.set("SLURM_PROCID", "1");
    env.set("SLURM_NTASKS", "3");
    env.set("SLURM_JOB_NODELIST", "gpu[07-09,12],cpu1");
    env.set("SLURM_JOB_ID", "12345");
    REQUIRE(detail::tcp_job_from_environment(&spec).is_ok());
    REQUIRE((spec.rank == 1 && spec.size == 3 && spec.master_addr == "gpu07" && spec.master_port == 20000 + 12345));
    CHECK(spec.job_id == "12345");
    env.set("SLURM_STEP_ID", "2");  // another step of the job is another job
    REQUIRE(detail::tcp_job_from_environment(&spec).is_ok());
    CHECK(spec.job_id == "12345.2");
    env.set("CHORUS_RANK", "2");
    env.set("CHORUS_MASTER_PORT", "4000");
    REQUIRE(detail::tcp_job_from_environment(&spec).is_ok());
    REQUIRE((spec.rank == 2 && spec.master_port == 4000 && spec.rank_var == "CHORUS_RANK"));
  }
  SECTION("errors name the variable") {
    EnvGuard env;
    env.set("WORLD_SIZE", "2");
    env.set("RANK", "5");
    env.set("MASTER_ADDR", "127.0.0.1");
    env.set("MASTER_PORT", "1234");
    Status s = detail::tcp_job_from_environment(&spec);
    REQUIRE_THAT(s.message(), Catch::Contains("RANK=5 is out of range for WORLD_SIZE=2"));
    env.set("MASTER_PORT", "http");
    s = detail::tcp_job_from_environment(&spec);
    REQUIRE_THAT(s.message(), Catch::Contains("MASTER_PORT='http' is not valid"));
  }
}

TEST_CASE("Slurm node lists give their first host", "[tcp][env]") {
  REQUIRE(detail::first_slurm_host("node1") == "node1");
  REQUIRE(detail::first_slurm_host("node1,node2") == "node1");
  REQUIRE(detail::first_slurm_host("n[003-010]") == "n003");
  REQUIRE(detail::first_slurm_host("n[5,7]") == "n5");
}

TEST_CASE("auto picks MPI under an MPI launcher, TCP when a rendezvous is named", "[tcp][env]") {
  RuntimeOptions o;
  EnvGuard env;
  if (!detail::built_with_mpi()) {  // CHORUS_WITH_MPI=OFF: TCP whatever the environment says
    env.set("OMPI_COMM_WORLD_SIZE", "2");
    REQUIRE(detail::chosen_transport(o) == Transport::kTcp);
    o.transport = Transport::kMpi;
    REQUIRE_THROWS_WITH(detail::make_backend(o), Catch::Contains("built without MPI"));
    return;
  }
  REQUIRE(detail::chosen_transport(o) == Transport::kMpi);
  env.set("MASTER_ADDR", "127.0.0.1");
  REQUIRE(detail::chosen_transport(o) == Transport::kTcp);
  env.set("OMPI_COMM_WORLD_SIZE", "2");
  REQUIRE(detail::chosen_transport(o) == Transport::kMpi);
  o.transport = Transport::kTcp;
  REQUIRE(detail::chosen_transport(o) == Transport::kTcp);
}

TEST_CASE("Ranks grouped by host id: local and cross ranks, and whether every host has as many", "[tcp][topology]") {
  const auto peers = [](std::vector<std::string> hosts) {
    std::vector<detail::TcpPeerInfo> out;
    for (std::string& h : hosts) out.push_back({std::move(h), "127.0.0.1", 1});
    return out;
  };
  // Hosts a, b, a, b: two of two, interleaved.
  const auto even = peers({"a", "b", "a", "b"});
  for (int r = 0; r < 4; ++r) {
    const detail::Topology t = detail::topology_of(r, even);
    CHECK((t.local_rank == r / 2 && t.local_size == 2 && t.cross_rank == r % 2 && t.cross_size == 2));
    CHECK(t.first_rank_on_host == r % 2);
    CHECK(t.homogeneous);
    CHECK(t.transport == Transport::kTcp);
  }
  // Three on a, one on b, two on c: not homogeneous, on every rank alike,
  // though 2 x 3 hosts = 6 ranks on c.
  const auto uneven = peers({"a", "a", "b", "a", "c", "c"});
  for (int r = 0; r < 6; ++r) CHECK_FALSE(detail::topology_of(r, uneven).homogeneous);
  const detail::Topology c1 = detail::topology_of(5, uneven);
  CHECK((c1.local_rank == 1 && c1.local_size == 2 && c1.cross_rank == 1 && c1.cross_size == 2));
  CHECK(detail::topology_of(0, peers({"a"})).homogeneous);
}

TEST_CASE("What the library was built with, and what carries the job, answer before init", "[tcp][basics]") {
  CHECK(chorus::mpi_built() == detail::built_with_mpi());
  CHECK((chorus::nccl_built() == 0 || chorus::cuda_built()));  // NCCL only in a CUDA build
  if (chorus::nccl_built() != 0) CHECK(chorus::nccl_built() >= 21800);
  CHECK_FALSE(chorus::mpi_enabled());  // no process-wide runtime here
  CHECK_FALSE(chorus::tcp_enabled());
  run_tcp_ranks(2, [](Runtime& rt, int) {
    RANK_CHECK(rt.transport() == Transport::kTcp);
    RANK_CHECK(rt.is_homogeneous());
  }, test::quiet_options());
}

TEST_CASE("A receive posted while its frame is already arriving gets that frame", "[tcp][mesh]") {
  // The frame starts landing in the mesh's own buffer (no receive yet); the
  // receive posted then must take it, not wait for a later frame.
  const int port = test::free_tcp_port();
  std::vector<std::unique_ptr<detail::TcpMesh>> meshes(2);
  const std::vector<Status> met = test::on_thread_ranks<Status>(2, [&](int rank) {
    detail::TcpWorld world;
    Status s = detail::tcp_rendezvous(spec_of(rank, 2, port, 10.0), 10.0, &world);
    if (s.is_ok()) meshes[static_cast<size_t>(rank)] = std::make_unique<detail::TcpMesh>(rank, std::move(world.links), 30);
    return s;
  });
  for (const Status& s : met) REQUIRE(s.is_ok());
  const size_t bytes = size_t{64} << 20;
  std::vector<char> sent(bytes, 7), got(bytes, 0);
  const std::vector<Status> outcomes = test::on_thread_ranks<Status>(2, [&](int rank) {
    detail::TcpMesh& mesh = *meshes[static_cast<size_t>(rank)];
    detail::TcpMesh::Ticket ticket = 0;
    if (rank == 1) {
      Status s = mesh.send(0, detail::TcpChannel::kCollective, 5, sent.data(), static_cast<int64_t>(bytes), &ticket);
      return s.is_ok() ? mesh.wait(ticket) : s;
    }
    mesh.progress(2000);  // the header and what the socket holds: far from all 64 MiB
    Status s = mesh.receive(1, detail::TcpChannel::kCollective, 5, got.data(), static_cast<int64_t>(bytes), &ticket);
    return s.is_ok() ? mesh.wait(ticket) : s;
  });
  for (const Status& s : outcomes) REQUIRE(s.is_ok());
  REQUIRE(got == sent);
  // What had come was copied; the rest went straight into `got`.
  REQUIRE(meshes[0]->bytes_kept_aside() < static_cast<int64_t>(bytes) / 2);
}
