#include "comm/loopback/loopback_backend.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "kernels/reduce_kernels.h"
#include "comm/loopback/in_process_links.h"
#include "comm/shm/shared_slots.h"

namespace chorus::detail {

class LoopbackWorld {
 public:
  LoopbackWorld(int size, int ranks_per_host, int64_t arena_bytes)
      : size_(size), per_host_(ranks_per_host > 0 ? ranks_per_host : size), mailboxes_(static_cast<size_t>(size)),
        network_(make_in_process_network(size)),
        staging_(size, kStagingBlockBytes, one_host() ? arena_bytes : 0) {}

  // Threads share all memory, but the world plays hosts as MPI sees them:
  // shared memory (plain heap blocks, small so that fused tensors cross
  // many of them) only when every rank is on one host, as under MPI. Arenas
  // only for the whole job, as under MPI (process sets stage).
  static constexpr int64_t kStagingBlockBytes = 4096;
  static constexpr int64_t kArenaBytes = 32 << 20;
  bool one_host() const { return per_host_ >= size_; }
  SharedSlots shared_slots(int rank) { return staging_.slots(rank); }
  std::shared_ptr<SharedArena> arena(int rank) const { return one_host() ? staging_.arena(rank) : nullptr; }
  std::unique_ptr<PeerLink> link(int rank) { return make_in_process_link(network_, rank); }

  int size() const { return size_; }
  // Backend::end_job: the first code wins, as the first MPI_Abort does.
  void end_job(int code) {
    int none = -1;
    exit_code_.compare_exchange_strong(none, code);
  }
  int exit_code() const { return exit_code_.load(); }
  Topology topology(int rank) const {
    Topology t;
    t.rank = rank;
    t.size = size_;
    t.local_rank = rank % per_host_;
    t.local_size = std::min(per_host_, size_ - (rank / per_host_) * per_host_);
    t.cross_rank = rank / per_host_;
    t.first_rank_on_host = (rank / per_host_) * per_host_;
    t.cross_size = (size_ - t.local_rank + per_host_ - 1) / per_host_;
    t.homogeneous = size_ % per_host_ == 0 || per_host_ >= size_;
    return t;
  }

  void post(int to, int from, std::string bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    mailboxes_[static_cast<size_t>(to)].emplace_back(from, std::move(bytes));
  }
  bool take(int rank, int* from, std::string* bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    auto& box = mailboxes_[static_cast<size_t>(rank)];
    if (box.empty()) return false;
    if (from) *from = box.front().first;
    *bytes = std::move(box.front().second);
    box.pop_front();
    return true;
  }

  // The world of the `index`-th split of this one (every rank splits in the
  // same order), created by whichever member asks first.
  std::shared_ptr<LoopbackWorld> child(uint64_t index, int size) {
    std::lock_guard<std::mutex> lock(mu_);
    auto& world = children_[index];
    if (!world) world = std::make_shared<LoopbackWorld>(size, 0, 0);
    return world;
  }

  // A collective: every rank hands in its buffer; the last to arrive
  // combines them with `combine(buffers)`; all leave together.
  template <class Combine>
  void rendezvous(int rank, void* buffer, Combine&& combine) {
    std::unique_lock<std::mutex> lock(coll_mu_);
    const uint64_t gen = generation_;
    buffers_.resize(static_cast<size_t>(size_));
    buffers_[static_cast<size_t>(rank)] = buffer;
    if (++arrived_ == size_) {
      combine(buffers_);
      arrived_ = 0;
      ++generation_;
      coll_cv_.notify_all();
    } else {
      coll_cv_.wait(lock, [&] { return generation_ != gen; });
    }
  }

 private:
  const int size_, per_host_;
  std::mutex mu_;
  std::vector<std::deque<std::pair<int, std::string>>> mailboxes_;
  std::map<uint64_t, std::shared_ptr<LoopbackWorld>> children_;
  std::shared_ptr<InProcessNetwork> network_;
  std::mutex coll_mu_;
  std::condition_variable coll_cv_;
  HeapStaging staging_;
  std::vector<void*> buffers_;
  int arrived_ = 0;
  uint64_t generation_ = 0;
  std::atomic<int> exit_code_{-1};
};

namespace {

class LoopbackControl final : public ControlChannel {
 public:
  LoopbackControl(LoopbackWorld& world, int rank) : world_(world), rank_(rank) {}
  Status send_to_coordinator(std::string bytes) override {
    world_.post(0, rank_, std::move(bytes));
    return Status::ok();
  }
  bool poll_from_workers(int* from, std::string* bytes) override { return world_.take(rank_, from, bytes); }
  Status send_to_workers(const std::string& bytes) override {
    for (int r = 1; r < world_.size(); ++r) world_.post(r, rank_, bytes);
    return Status::ok();
  }
  bool poll_from_coordinator(std::string* bytes) override { return world_.take(rank_, nullptr, bytes); }
  bool close(std::chrono::milliseconds) override { return true; }

 private:
  LoopbackWorld& world_;
  int rank_;
};

// The transport's collectives for ranks that are threads: each is a
// rendezvous where the last rank to arrive does the work for all.
class LoopbackComm final : public Communicator {
 public:
  LoopbackComm(LoopbackWorld& world, int rank) : world_(world), rank_(rank) {}
  Status allreduce(const void* input, void* output, int64_t count, DataType dtype, ReduceOp op) override {
    struct Slot {
      const void* in;
      void* out;
    } mine{input, output};
    const size_t bytes = static_cast<size_t>(count * dtype_size(dtype));
    world_.rendezvous(rank_, &mine, [&](std::vector<void*>& all) {
      std::vector<char> sum(bytes + 1);
      if (bytes > 0) std::memcpy(sum.data(), static_cast<Slot*>(all[0])->in, bytes);
      for (size_t r = 1; r < all.size(); ++r) reduce_into(sum.data(), static_cast<Slot*>(all[r])->in, count, dtype, op);
      for (void* slot : all) {
        if (bytes > 0) std::memcpy(static_cast<Slot*>(slot)->out, sum.data(), bytes);
      }
    });
    return Status::ok();
  }
  Status allgatherv(const void* input, void* output, const std::vector<int64_t>& rows, int64_t row_bytes) override {
    struct Slot {
      const void* in;
      void* out;
    } mine{input, output};
    world_.rendezvous(rank_, &mine, [&](std::vector<void*>& all) {
      for (size_t dst = 0; dst < all.size(); ++dst) {
        char* out = static_cast<char*>(static_cast<Slot*>(all[dst])->out);
        for (size_t src = 0; src < all.size(); ++src) {
          const int64_t bytes = rows[src] * row_bytes;
          if (bytes > 0) std::memcpy(out, static_cast<Slot*>(all[src])->in, static_cast<size_t>(bytes));
          out += bytes;
        }
      }
    });
    return Status::ok();
  }
  Status alltoallv(const void* input, const std::vector<int64_t>& send_rows, void* output,
                   const std::vector<int64_t>&, int64_t row_bytes) override {
    struct Slot {
      const void* in;
      const std::vector<int64_t>* send;
      void* out;
    } mine{input, &send_rows, output};
    world_.rendezvous(rank_, &mine, [&](std::vector<void*>& all) {
      for (size_t dst = 0; dst < all.size(); ++dst) {
        char* out = static_cast<char*>(static_cast<Slot*>(all[dst])->out);
        for (size_t src = 0; src < all.size(); ++src) {
          const Slot* s = static_cast<Slot*>(all[src]);
          int64_t before = 0;
          for (size_t k = 0; k < dst; ++k) before += (*s->send)[k];
          const int64_t bytes = (*s->send)[dst] * row_bytes;
          if (bytes > 0) std::memcpy(out, static_cast<const char*>(s->in) + before * row_bytes, static_cast<size_t>(bytes));
          out += bytes;
        }
      }
    });
    return Status::ok();
  }
  Status reducescatter(const void* input, void* output, const std::vector<int64_t>& counts, DataType dtype,
                       ReduceOp op) override {
    struct Slot {
      const void* in;
      void* out;
    } mine{input, output};
    int64_t total = 0;
    for (int64_t c : counts) total += c;
    const int64_t esize = dtype_size(dtype);
    world_.rendezvous(rank_, &mine, [&](std::vector<void*>& all) {
      std::vector<char> sum(static_cast<size_t>(total * esize) + 1);
      if (total > 0) std::memcpy(sum.data(), static_cast<Slot*>(all[0])->in, static_cast<size_t>(total * esize));
      for (size_t r = 1; r < all.size(); ++r) reduce_into(sum.data(), static_cast<Slot*>(all[r])->in, total, dtype, op);
      int64_t offset = 0;
      for (size_t r = 0; r < all.size(); ++r) {
        const int64_t bytes = counts[r] * esize;
        if (bytes > 0) std::memcpy(static_cast<Slot*>(all[r])->out, sum.data() + offset, static_cast<size_t>(bytes));
        offset += bytes;
      }
    });
    return Status::ok();
  }
  Status broadcast(void* buffer, int64_t bytes, int root) override {
    world_.rendezvous(rank_, buffer, [&](std::vector<void*>& all) {
      for (size_t r = 0; r < all.size(); ++r) {
        if (static_cast<int>(r) != root) std::memcpy(all[r], all[static_cast<size_t>(root)], static_cast<size_t>(bytes));
      }
    });
    return Status::ok();
  }
  const char* name() const override { return "loopback"; }

 private:
  LoopbackWorld& world_;
  int rank_;
};

class LoopbackBackend final : public Backend {
 public:
  LoopbackBackend(std::shared_ptr<LoopbackWorld> world, int rank, SetScope scope = {})
      : world_(std::move(world)), rank_(rank), scope_(std::move(scope)), control_(*world_, rank),
        collectives_(*world_, rank), link_(world_->link(rank)), slots_(world_->shared_slots(rank)) {}
  Status start() override { return Status::ok(); }
  void stop() override {}
  Topology topology() const override {
    Topology t = world_->topology(rank_);
    t.scope = scope_;
    return t;
  }
  ControlChannel& control() override { return control_; }
  Communicator& collectives() override { return collectives_; }
  PeerLink& peer_link() override { return *link_; }
  const SharedSlots* shared_slots() const override { return world_->one_host() ? &slots_ : nullptr; }
  std::shared_ptr<SharedArena> shared_arena() const override { return world_->arena(rank_); }
  Status split(int32_t set_id, const std::vector<int>& members, std::unique_ptr<Backend>* out) override {
    const uint64_t index = splits_++;
    out->reset();
    auto it = std::lower_bound(members.begin(), members.end(), rank_);
    if (it == members.end() || *it != rank_) return Status::ok();
    auto child = world_->child(index, static_cast<int>(members.size()));
    *out = std::make_unique<LoopbackBackend>(child, static_cast<int>(it - members.begin()), SetScope{set_id, members});
    return Status::ok();
  }
  void end_job(int exit_code) override { world_->end_job(exit_code); }

 private:
  std::shared_ptr<LoopbackWorld> world_;
  int rank_;
  SetScope scope_;
  uint64_t splits_ = 0;  // only the background thread splits
  LoopbackControl control_;
  LoopbackComm collectives_;
  std::unique_ptr<PeerLink> link_;
  SharedSlots slots_;
};

}  // namespace

std::shared_ptr<LoopbackWorld> make_loopback_world(int size, int ranks_per_host) {
  return std::make_shared<LoopbackWorld>(size, ranks_per_host, LoopbackWorld::kArenaBytes);
}

std::unique_ptr<Backend> make_loopback_backend(std::shared_ptr<LoopbackWorld> world, int rank) {
  return std::make_unique<LoopbackBackend>(std::move(world), rank);
}

int loopback_exit_code(const std::shared_ptr<LoopbackWorld>& world) { return world->exit_code(); }

}  // namespace chorus::detail
