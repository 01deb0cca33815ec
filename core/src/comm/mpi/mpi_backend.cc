// The production Backend: MPI for topology, control and data.
#include <mpi.h>

#include <memory>
#include <string>
#include <vector>

#include "comm/backend.h"
#include "comm/mpi/mpi_communicator.h"
#include "comm/mpi/mpi_control_channel.h"
#include "comm/mpi/mpi_peer_link.h"
#include "comm/mpi/mpi_environment.h"
#include "comm/mpi/mpi_types.h"
#include "comm/ring_or_fallback.h"
#include "common/logging.h"

namespace chorus::detail {

namespace {

// Settings that change what every rank does on the wire (which algorithm,
// segment sizes, cache slots) must agree, or ranks would wait on each other
// forever. Every rank checks the same gathered digests, so all fail together.
Status check_settings_agree(MPI_Comm comm, int size, const RuntimeOptions& o) {
  uint64_t digest = 1469598103934665603ull;
  auto mix = [&](uint64_t v) { digest = (digest ^ v) * 1099511628211ull; };
  mix(static_cast<uint64_t>(o.allreduce_algorithm));
  mix(static_cast<uint64_t>(o.ring_threshold_bytes));
  mix(static_cast<uint64_t>(o.ring_segment_bytes));
  mix(static_cast<uint64_t>(o.cache_capacity));
  std::vector<uint64_t> all(static_cast<size_t>(size));
  MPI_Allgather(&digest, 1, MPI_UINT64_T, all.data(), 1, MPI_UINT64_T, comm);
  std::string differing;
  for (int r = 1; r < size; ++r) {
    if (all[static_cast<size_t>(r)] != all[0]) differing += (differing.empty() ? "" : ", ") + std::to_string(r);
  }
  if (differing.empty()) return Status::ok();
  return Status::invalid_argument(
      "CHORUS_ALLREDUCE_ALGO, CHORUS_RING_THRESHOLD_BYTES, CHORUS_RING_SEGMENT_BYTES and CHORUS_CACHE_CAPACITY "
      "must be the same on every rank, but rank(s) " + differing + " differ from rank 0 "
      "(chorusrun's flags set them on every rank)");
}

class MpiBackend final : public Backend {
 public:
  explicit MpiBackend(const RuntimeOptions& options) : options_(options) {}

  Status start() override {
    Status s = ensure_mpi_initialized();
    if (!s.is_ok()) return s;
    // Private communicators: the program's own MPI traffic on
    // MPI_COMM_WORLD never mixes with ours, nor control with data.
    MPI_Comm_dup(MPI_COMM_WORLD, &control_comm_);
    MPI_Comm_dup(MPI_COMM_WORLD, &data_comm_);
    MPI_Comm_dup(MPI_COMM_WORLD, &ring_comm_);
    MPI_Comm_rank(MPI_COMM_WORLD, &topo_.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &topo_.size);
    s = check_settings_agree(control_comm_, topo_.size, options_);
    if (!s.is_ok()) {
      stop();
      return s;
    }
    // local: the ranks that share this host's memory; cross: the ranks with
    // the same local rank on every host.
    MPI_Comm local, cross;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, topo_.rank, MPI_INFO_NULL, &local);
    MPI_Comm_rank(local, &topo_.local_rank);
    MPI_Comm_size(local, &topo_.local_size);
    MPI_Comm_split(MPI_COMM_WORLD, topo_.local_rank, topo_.rank, &cross);
    MPI_Comm_rank(cross, &topo_.cross_rank);
    MPI_Comm_size(cross, &topo_.cross_size);
    MPI_Comm_free(&local);
    MPI_Comm_free(&cross);
    s = types_.create();
    if (!s.is_ok()) return s;
    control_ = std::make_unique<MpiControlChannel>(control_comm_, topo_.rank, topo_.size);
    mpi_data_ = std::make_unique<MpiCommunicator>(data_comm_, types_);
    link_ = std::make_unique<MpiPeerLink>(ring_comm_, topo_.rank, topo_.size);
    data_ = std::make_unique<RingOrFallbackCommunicator>(*mpi_data_, *link_, options_);
    return Status::ok();
  }

  void stop() override {
    control_.reset();
    data_.reset();
    link_.reset();
    mpi_data_.reset();
    types_.free();
    if (control_comm_ != MPI_COMM_NULL) MPI_Comm_free(&control_comm_);
    if (data_comm_ != MPI_COMM_NULL) MPI_Comm_free(&data_comm_);
    if (ring_comm_ != MPI_COMM_NULL) MPI_Comm_free(&ring_comm_);
  }

  Topology topology() const override { return topo_; }
  ControlChannel& control() override { return *control_; }
  Communicator& data() override { return *data_; }

 private:
  const RuntimeOptions options_;
  Topology topo_;
  MPI_Comm control_comm_ = MPI_COMM_NULL;
  MPI_Comm data_comm_ = MPI_COMM_NULL;  // MPI's own collectives
  MPI_Comm ring_comm_ = MPI_COMM_NULL;  // the ring's point-to-point traffic
  MpiTypes types_;
  std::unique_ptr<MpiControlChannel> control_;
  std::unique_ptr<MpiCommunicator> mpi_data_;
  std::unique_ptr<MpiPeerLink> link_;
  std::unique_ptr<RingOrFallbackCommunicator> data_;
};

}  // namespace

std::unique_ptr<Backend> make_mpi_backend(const RuntimeOptions& options) {
  return std::make_unique<MpiBackend>(options);
}

}  // namespace chorus::detail
