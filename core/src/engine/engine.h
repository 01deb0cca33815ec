#pragma once
// The engine of one process set (the global one, or a registered one):
// options, logger, backend, tensor queue and the background thread (which
// creates and runs the BackgroundLoop). Every set of a Runtime has its own
// engine and thread; they share the stats.

#include <atomic>
#include <future>
#include <memory>
#include <mutex>
#include <thread>

#include "chorus/runtime.h"
#include "comm/backend.h"
#include "common/logging.h"
#include "common/status_or.h"
#include "engine/background_loop.h"
#include "engine/device_support.h"
#include "engine/shared_stats.h"
#include "engine/tensor_queue.h"
#include "timeline/timeline.h"

namespace chorus::detail {

class Engine {
 public:
  /// `stats` is shared with the Runtime's other engines; nullptr: its own.
  /// `device`: what tensors on a GPU go through (the api layer passes this
  /// build's, device/build_support.h); nullptr: none (CUDA tensors refused).
  /// `on_device_fault`: see BackgroundLoop::FaultListener (a process set's
  /// engine ends the job through the global engine's request_shutdown).
  Engine(std::unique_ptr<Backend> backend, RuntimeOptions options, std::shared_ptr<SharedStats> stats = nullptr,
         std::shared_ptr<const DeviceSupport> device = nullptr,
         BackgroundLoop::FaultListener on_device_fault = nullptr);
  ~Engine();

  void shutdown();
  /// Asks every rank to shut down with `reason`, without waiting (safe from
  /// another engine's thread).
  void request_shutdown(const std::string& reason);
  bool is_running() const;
  const Topology& topology() const { return topo_; }
  const RuntimeOptions& options() const { return options_; }
  RuntimeStats stats() const { return stats_->get(); }
  const std::shared_ptr<SharedStats>& shared_stats() const { return stats_; }
  const std::shared_ptr<const DeviceSupport>& device_support() const { return device_; }

  /// Validates locally and queues; throws chorus::Error on bad input or
  /// after shutdown.
  std::vector<Handle> enqueue(std::vector<TensorEntry> entries);
  /// One tensor, without the vectors.
  Handle enqueue(TensorEntry entry);
  /// See Runtime::allocate_shared_host.
  std::shared_ptr<void> allocate_shared_host(int64_t bytes);
  bool in_shared_host(const void* p, int64_t bytes) const { return arena_ && arena_->contains(p, bytes); }
  /// This engine's timeline (see Timeline::open / close / record): safe
  /// while the background thread runs.
  Timeline& timeline() { return timeline_; }

 private:
  void thread_main(std::promise<Status>* started);
  /// Ready points recorded during one enqueue call, by (device, stream):
  /// tensors enqueued together from one stream share one (no host code runs
  /// between them), so a group of 200 records one event, not 200.
  struct RecordedMarks {
    struct Mark {
      int device;
      void* stream;
      std::shared_ptr<DeviceMark> mark;
    };
    std::vector<Mark> marks;
  };
  /// A CUDA tensor: checked against this build and its ready point recorded
  /// on the producer's stream (or taken from `recorded`); an error names the
  /// tensor.
  Status prepare_device(TensorEntry& entry, RecordedMarks& recorded) const;
  StatusOr<std::shared_ptr<DeviceMark>> ready_mark(int device, void* stream, RecordedMarks& recorded,
                                                   const TensorEntry& entry, const char* which) const;
  /// Prepares the CUDA entries; a device this rank cannot use (no GPU
  /// support, no OpContext, a ready point it cannot record) is its own
  /// refusal, negotiated like bad input (collective_entries.h): every
  /// member of `entries` is refused with it, so the other ranks fail too.
  void prepare_or_refuse(std::vector<TensorEntry*> entries) const;

  RuntimeOptions options_;
  Logger logger_;
  BackgroundLoop::FaultListener on_device_fault_;
  std::unique_ptr<Backend> backend_;
  TensorQueue queue_;
  std::shared_ptr<SharedStats> stats_;
  std::shared_ptr<const DeviceSupport> device_;
  Timeline timeline_;
  Topology topo_;
  std::unique_ptr<BackgroundLoop> loop_;  // created on the background thread
  std::mutex loop_mu_;                    // guards loop_ against shutdown()
  std::mutex join_mu_;                    // one thread joins thread_
  std::atomic<bool> running_{false};
  std::shared_ptr<SharedArena> arena_;  // set before the constructor returns, then read only
  std::atomic<bool> arena_fallback_said_{false};
  std::thread thread_;
};

}  // namespace chorus::detail
