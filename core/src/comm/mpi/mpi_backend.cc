// The production Backend: MPI for topology, control and data.
#include <mpi.h>

#include <algorithm>
#include <cstdlib>
#include <chrono>
#include <thread>
#include <memory>
#include <string>
#include <vector>

#include "comm/settings_check.h"
#include "comm/backend.h"
#include "comm/mpi/mpi_communicator.h"
#include "comm/mpi/mpi_control_channel.h"
#include "comm/mpi/mpi_environment.h"
#include "comm/mpi/mpi_peer_link.h"
#include "comm/mpi/mpi_types.h"
#include "comm/shm/shared_memory_start.h"

namespace chorus::detail {

namespace {

// end_job: rank r waits r times this before it ends the job.
constexpr std::chrono::seconds kAbortStagger{1};

bool mpi_thread_multiple() {
  int provided = 0;
  MPI_Query_thread(&provided);
  return provided >= MPI_THREAD_MULTIPLE;
}

// The whole job (over MPI_COMM_WORLD) or one process set (over the
// communicator split for it, which it then owns).
class MpiBackend final : public Backend {
 public:
  explicit MpiBackend(const RuntimeOptions& options) : options_(options) {}
  MpiBackend(const RuntimeOptions& options, MPI_Comm set_comm, SetScope scope)
      : options_(options), parent_(set_comm), owns_parent_(true) {
    topo_.scope = std::move(scope);
  }

  Status start() override {
    Status s = ensure_mpi_initialized();
    if (!s.is_ok()) return s;
    thread_multiple_ = mpi_thread_multiple();
    mpi_thread_ = std::this_thread::get_id();
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank_);
    // Private communicators: the program's own MPI traffic on
    // MPI_COMM_WORLD never mixes with ours, nor control with data.
    MPI_Comm_dup(parent_, &control_comm_);
    MPI_Comm_dup(parent_, &data_comm_);
    MPI_Comm_dup(parent_, &ring_comm_);
    MPI_Comm_rank(parent_, &topo_.rank);
    MPI_Comm_size(parent_, &topo_.size);
    s = types_.create();
    if (!s.is_ok()) return s;
    mpi_data_ = std::make_unique<MpiCommunicator>(data_comm_, types_);
    s = check_settings_agree(*mpi_data_, topo_.size, options_, thread_multiple_);
    if (!s.is_ok()) {
      stop();
      return s;
    }
    // local: the ranks that share this host's memory; cross: the ranks with
    // the same local rank on every host.
    MPI_Comm local, cross;
    MPI_Comm_split_type(parent_, MPI_COMM_TYPE_SHARED, topo_.rank, MPI_INFO_NULL, &local);
    MPI_Comm_rank(local, &topo_.local_rank);
    MPI_Comm_size(local, &topo_.local_size);
    MPI_Allreduce(&topo_.rank, &topo_.first_rank_on_host, 1, MPI_INT, MPI_MIN, local);
    MPI_Comm_split(parent_, topo_.local_rank, topo_.rank, &cross);
    MPI_Comm_rank(cross, &topo_.cross_rank);
    MPI_Comm_size(cross, &topo_.cross_size);
    MPI_Comm_free(&local);
    MPI_Comm_free(&cross);
    int local_sizes[2] = {topo_.local_size, -topo_.local_size};  // the largest and the smallest
    MPI_Allreduce(MPI_IN_PLACE, local_sizes, 2, MPI_INT, MPI_MAX, parent_);
    topo_.homogeneous = local_sizes[0] == -local_sizes[1];
    topo_.transport = Transport::kMpi;
    control_ = std::make_unique<MpiControlChannel>(control_comm_, topo_.rank, topo_.size);
    link_ = std::make_unique<MpiPeerLink>(ring_comm_, topo_.rank, topo_.size);
    s = start_host_shared_memory(*mpi_data_, topo_, options_, &shared_memory_);
    if (!s.is_ok()) {
      stop();
      return s;
    }
    return Status::ok();
  }

  void stop() override {
    control_.reset();
    shared_memory_.reset();
    link_.reset();
    mpi_data_.reset();
    types_.free();
    if (control_comm_ != MPI_COMM_NULL) MPI_Comm_free(&control_comm_);
    if (data_comm_ != MPI_COMM_NULL) MPI_Comm_free(&data_comm_);
    if (ring_comm_ != MPI_COMM_NULL) MPI_Comm_free(&ring_comm_);
    if (owns_parent_ && parent_ != MPI_COMM_NULL) MPI_Comm_free(&parent_);
  }

  // Ranks that end the job at nearly the same moment can break mpirun
  // (Open MPI 4.1): in CI, with ranks 100 ms apart, it hung after the abort
  // notice with every rank gone, and its PMIx server has crashed in
  // PMIx_server_finalize when a rank exited while it tore the job down. So
  // one rank ends the job: the lowest that gets here, as rank r (of this
  // backend's communicator: a set's watchdog ends it from the set) waits r
  // seconds first, and mpirun has ended the others long before their turn
  // (a worker's turn comes only when rank 0 itself is the silent one). From a
  // thread other than ours (the collective watchdog, while this thread is
  // inside MPI) MPI may be called only under MPI_THREAD_MULTIPLE; below that
  // the process exits with the code, and mpirun ends the others.
  void end_job(int exit_code) override {
    std::this_thread::sleep_for(kAbortStagger * std::min(topo_.rank, 20));  // in this set: its lowest goes first
    if (std::this_thread::get_id() != mpi_thread_ && !thread_multiple_) std::_Exit(exit_code);
    MPI_Abort(MPI_COMM_WORLD, exit_code);
  }

  Topology topology() const override { return topo_; }
  ControlChannel& control() override { return *control_; }
  Communicator& collectives() override { return *mpi_data_; }
  PeerLink& peer_link() override { return *link_; }
  const SharedSlots* shared_slots() const override { return shared_memory_ ? &shared_memory_->slots() : nullptr; }
  std::shared_ptr<SharedArena> shared_arena() const override {
    return shared_memory_ ? shared_memory_->arena() : nullptr;
  }

  // A set's own background thread makes its MPI calls while this one makes
  // ours: that needs MPI_THREAD_MULTIPLE, which every rank has or lacks alike
  // (checked at start), so all refuse together without entering MPI.
  Status split(int32_t set_id, const std::vector<int>& members, std::unique_ptr<Backend>* out) override {
    out->reset();
    if (!thread_multiple_) {
      return Status::precondition_error(
          "process sets need MPI_THREAD_MULTIPLE (each set runs on its own thread), but MPI was initialized with a "
          "lower thread level; let Chorus initialize MPI, or call MPI_Init_thread with MPI_THREAD_MULTIPLE");
    }
    const bool member = std::binary_search(members.begin(), members.end(), topo_.rank);
    MPI_Comm comm = MPI_COMM_NULL;
    // On the data communicator: its collectives run in response order, like this one.
    if (MPI_Comm_split(data_comm_, member ? 0 : MPI_UNDEFINED, topo_.rank, &comm) != MPI_SUCCESS) {
      return Status::unknown_error("MPI_Comm_split for process set " + std::to_string(set_id) + " failed");
    }
    if (member) *out = std::make_unique<MpiBackend>(options_, comm, SetScope{set_id, members});
    return Status::ok();
  }

 private:
  const RuntimeOptions options_;
  MPI_Comm parent_ = MPI_COMM_WORLD;
  bool owns_parent_ = false;
  bool thread_multiple_ = false;
  std::thread::id mpi_thread_;  // the thread that started us: all our MPI calls
  int world_rank_ = 0;
  Topology topo_;
  MPI_Comm control_comm_ = MPI_COMM_NULL;
  MPI_Comm data_comm_ = MPI_COMM_NULL;  // MPI's own collectives
  MPI_Comm ring_comm_ = MPI_COMM_NULL;  // the ring's point-to-point traffic
  MpiTypes types_;
  std::unique_ptr<MpiControlChannel> control_;
  std::unique_ptr<MpiCommunicator> mpi_data_;
  std::unique_ptr<MpiPeerLink> link_;
  std::unique_ptr<HostSharedMemory> shared_memory_;
};

}  // namespace

std::unique_ptr<Backend> make_mpi_backend(const RuntimeOptions& options) {
  return std::make_unique<MpiBackend>(options);
}

}  // namespace chorus::detail
