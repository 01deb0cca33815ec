#include "device/staged_device_operations.h"

#include <chrono>
#include <condition_variable>
#include <deque>
#include <future>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include "common/rank_text.h"
#include "engine/collective_watchdog.h"
#include "engine/job_end.h"
#include "device/device_timeline.h"
#include "engine/operation_executor.h"
#include "engine/rank_flags.h"
#include "device/staged_job.h"

namespace chorus::detail {

namespace {

// The worker is inside the host collectives of one job while this lives.
class Inside {
 public:
  Inside(CollectiveWatchdog& watchdog, const std::vector<std::string>& names) : watchdog_(watchdog) {
    watchdog_.entered(names);
  }
  ~Inside() { watchdog_.left(); }
  Inside(const Inside&) = delete;
  Inside& operator=(const Inside&) = delete;

 private:
  CollectiveWatchdog& watchdog_;
};

class StagedDeviceOperations final : public DeviceOperations {
 public:
  StagedDeviceOperations(std::unique_ptr<Backend> own, const DeviceOperationsContext& context)
      : backend_(std::move(own)),
        options_(context.options),
        logger_(context.logger),
        stats_(context.stats),
        memory_(context.memory),
        pool_(*memory_),
        host_outputs_(staging_op_context(pool_)),
        timeline_(context.timeline),
        scope_(context.backend.topology().scope) {
    worker_ = std::thread([this] { worker_main(); });
  }

  /// Drains: every queued job's host collective runs (the other ranks wait
  /// in it), and its entries complete.
  ~StagedDeviceOperations() override { close(std::nullopt); }

  void execute(const Response& response, std::vector<TensorEntry> entries) override {
    const auto handed_over = std::chrono::steady_clock::now();
    StagedJob job = stage_in(response, std::move(entries), *memory_, pool_, host_outputs_);
    job.handed_over = handed_over;
    const int64_t allocations = pool_.allocations();
    stats_.update([&](InternalStats& st) {
      ++st.staged_device_ops;
      st.staging_allocations = allocations;
    });
    std::lock_guard<std::mutex> lock(mu_);
    jobs_.push_back(std::move(job));
    cv_.notify_one();
  }

  Status fault() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return fault_;
  }

  /// Whether the worker's transport started here (once, after the worker ran start()).
  Status wait_started() { return started_.get_future().get(); }

  void abort(const Status& why) override { close(why); }

 private:
  void close(const std::optional<Status>& why) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (why && aborted_.is_ok()) aborted_ = *why;
      closing_ = true;
    }
    cv_.notify_one();
    std::lock_guard<std::mutex> lock(join_mu_);
    if (worker_.joinable()) worker_.join();
  }

  void worker_main();
  void close_transport();
  void run_job(StagedJob& job, OperationExecutor* host, const Status& unusable);
  Status copied_in(const StagedJob& job, const std::string& what, const Status& unusable);
  std::vector<Status> host_collective(StagedJob& job, OperationExecutor* host, const Status& in,
                                      const std::string& what);
  void complete(StagedJob& job, const std::vector<Status>& each);
  Status await(const std::vector<std::shared_ptr<DeviceMark>>& marks, const std::string& what) const;
  // Not ok once the runtime is ending (abort) or a device operation failed.
  Status ended_status() const {
    std::lock_guard<std::mutex> lock(mu_);
    if (!aborted_.is_ok()) return aborted_;
    if (!fault_.is_ok()) return Status(fault_.code(), "an earlier device operation failed: " + fault_.message());
    return Status::ok();
  }
  void note_fault(const Status& s) {
    std::lock_guard<std::mutex> lock(mu_);
    if (fault_.is_ok()) fault_ = s;
  }

  std::unique_ptr<Backend> backend_;  // the worker's: split from the engine's
  const RuntimeOptions options_;
  const Logger& logger_;
  SharedStats& stats_;
  std::shared_ptr<DeviceMemory> memory_;
  StagingPool pool_;
  std::shared_ptr<OpContext> host_outputs_;
  Timeline& timeline_;  // the engine's: each tensor's QUEUE, copies and host collective
  const SetScope scope_;  // the engine's: how its ranks are named in messages
  // Never opened: the host collective's "data plane" spans would overlap the
  // background thread's on that row; the tensors' own rows show the job.
  Timeline host_timeline_;
  CollectiveWatchdog* watchdog_ = nullptr;  // the worker's own, while it runs
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<StagedJob> jobs_;
  bool closing_ = false;
  Status fault_;    // the first device failure
  Status aborted_;  // set by abort(): queued jobs fail with it
  std::mutex join_mu_;
  std::promise<Status> started_;
  std::thread worker_;
};

void StagedDeviceOperations::worker_main() {
  const Status started = backend_->start();
  Status unusable;
  if (!started.is_ok()) {
    unusable = Status(started.code(), "starting the staged path's transport failed: " + started.message());
    note_fault(unusable);
  }
  started_.set_value(unusable);
  std::optional<OperationExecutor> host;
  if (started.is_ok()) host.emplace(*backend_, options_, stats_, host_timeline_, logger_);
  // A rank stopped inside a host collective: warned about and ended like
  // one inside the background thread's (engine/collective_watchdog.h).
  CollectiveWatchdog watchdog(options_, logger_, [this](int exit_code) { backend_->end_job(exit_code); });
  watchdog_ = &watchdog;
  for (;;) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return closing_ || !jobs_.empty(); });
    if (jobs_.empty()) break;
    StagedJob job = std::move(jobs_.front());
    jobs_.pop_front();
    lock.unlock();
    run_job(job, host ? &*host : nullptr, unusable);
  }
  watchdog_ = nullptr;
  host.reset();
  // A copy that never finished may still target a staging buffer, and
  // cudaFreeHost can block on a hung device: such buffers are leaked.
  if (!ended_status().is_ok()) pool_.leak_buffers();
  if (started.is_ok()) close_transport();
}

// The other ranks' workers may still be inside the last host collective,
// reading what this rank sent: its connections close only once every rank's
// worker got here too (within the engine's close bound), as the engine's own
// do. Closed at once, a peer that had not yet read its last bytes found the
// connection gone and failed a collective that had all its data.
void StagedDeviceOperations::close_transport() {
  if (!backend_->control().close(kCloseBound)) {
    CHORUS_LOG(logger_, kWarning) << "the staged path's transport: not every rank's worker got to the close within "
                                  << kCloseBound.count() / 1000.0 << " s; closing anyway";
  }
  backend_->stop();
}

// Polls the marks, yielding then sleeping a little longer each time, until
// all are done, one fails, or CHORUS_GPU_OP_TIMEOUT_SECONDS passes.
Status StagedDeviceOperations::await(const std::vector<std::shared_ptr<DeviceMark>>& marks,
                                     const std::string& what) const {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const double limit = options_.gpu_op_timeout_seconds;
  auto pause = std::chrono::microseconds(0);
  for (const auto& mark : marks) {
    for (;;) {
      const Status s = mark->query();
      if (s.is_ok()) break;
      if (s.code() != StatusCode::kInProgress) return Status(s.code(), what + " failed: " + s.message());
      if (const Status ended = ended_status(); !ended.is_ok()) return Status(ended.code(), what + ": " + ended.message());
      if (limit > 0 && std::chrono::duration<double>(Clock::now() - start).count() > limit) {
        std::ostringstream seconds;
        seconds << limit;
        return Status::timeout(what + " did not finish within " + seconds.str() + " s (CHORUS_GPU_OP_TIMEOUT_SECONDS)");
      }
      if (pause.count() == 0) {
        std::this_thread::yield();
      } else {
        std::this_thread::sleep_for(pause);
      }
      pause = std::min(pause + std::chrono::microseconds(20), std::chrono::microseconds(1000));
    }
  }
  return Status::ok();
}

// Waits for the copies in; a failure is this rank's fault. After a fault or
// an abort nothing more is waited on: a job queued behind a hung copy fails
// at once instead of waiting a fresh CHORUS_GPU_OP_TIMEOUT_SECONDS (its rank
// still sends 0 in the agreement, so the other ranks pair up).
Status StagedDeviceOperations::copied_in(const StagedJob& job, const std::string& what, const Status& unusable) {
  if (!unusable.is_ok()) return unusable;
  if (const Status ended = ended_status(); !ended.is_ok()) return Status(ended.code(), what + ": " + ended.message());
  Status in = job.queued.is_ok() ? await(job.copied_in, what + ": the copy to the host")
                                 : Status(job.queued.code(), what + ": " + job.queued.message());
  if (!in.is_ok()) note_fault(in);
  return in;
}

// The host collective runs only when every rank's copies in succeeded (one
// small allgather of a flag first), so a rank whose device failed never
// feeds the others stale bytes: all of them fail this job instead, and the
// failed rank's fault() then ends the job everywhere.
std::vector<Status> StagedDeviceOperations::host_collective(StagedJob& job, OperationExecutor* host, const Status& in,
                                                            const std::string& what) {
  const size_t n = job.entries.size();
  if (host == nullptr) return std::vector<Status>(n, in);
  // One flag per rank (an allgather), so the others can name who failed.
  Inside inside(*watchdog_, job.response.names);
  // Ranks named as the engine's scope numbers them (the worker's own backend
  // counts its members from 0).
  const StatusOr<std::vector<int>> failed =
      ranks_saying_no(backend_->collectives(), backend_->topology().size, scope_, in.is_ok());
  if (!failed.is_ok()) {
    const Status s(failed.status().code(), what + ": agreeing that every rank's copy to the host succeeded failed: " +
                                               failed.status().message());
    note_fault(s);
    return std::vector<Status>(n, s);
  }
  if (!in.is_ok()) return std::vector<Status>(n, in);
  if (!failed.value().empty()) {
    return std::vector<Status>(n, Status::aborted(what + ": another rank's copy to the host failed (on " +
                                                         rank_list(failed.value()) + "; its error ends the job)"));
  }
  return host->run(job.response, job.host);
}

void StagedDeviceOperations::run_job(StagedJob& job, OperationExecutor* host, const Status& unusable) {
  const std::string what = "staged " + std::string(collective_name(job.entries.front().request.type)) +
                           " of tensor(s) " + job.names;
  const TensorSpans spans(timeline_, job.entries);  // Horovod's activity names
  auto since = job.handed_over;  // each span starts where the one before ended
  auto span = [&](const std::string& label) {
    if (!spans.on()) return;
    const auto now = std::chrono::steady_clock::now();
    spans.record(label, since, now);
    since = now;
  };
  span("QUEUE");
  // The host collective leases pinned memory for its outputs on this thread.
  const Status current = memory_->use_device(job.entries.front().input->device());
  const Status in =
      copied_in(job, what, current.is_ok() ? unusable : Status(current.code(), what + ": " + current.message()));
  span("MEMCPY_IN_HOST_BUFFER");
  std::vector<Status> each = host_collective(job, host, in, what);
  span(device_activity("HOST_", job.response.type));
  Status aborted;
  {
    std::lock_guard<std::mutex> lock(mu_);
    aborted = aborted_;
  }
  if (!aborted.is_ok()) {
    // The runtime is ending after a fault: nothing more goes to the device;
    // a tensor that failed already keeps its own reason.
    for (Status& s : each) {
      if (s.is_ok()) s = aborted;
    }
  } else if (in.is_ok()) {
    StatusOr<std::vector<std::shared_ptr<DeviceMark>>> back = stage_out(job, each, *memory_, logger_);
    Status out = back.is_ok() ? await(back.value(), what + ": the copy back to the device")
                              : Status(back.status().code(), what + ": queuing the copy back failed: " +
                                                                 back.status().message());
    span("MEMCPY_OUT_HOST_BUFFER");
    if (!out.is_ok()) {
      note_fault(out);
      each.assign(job.entries.size(), out);
    }
  }
  complete(job, each);
}

// Outputs known only now reach the handles before they complete.
void StagedDeviceOperations::complete(StagedJob& job, const std::vector<Status>& each) {
  int64_t failed = 0;
  CompletionBatch batch;
  for (size_t i = 0; i < job.entries.size(); ++i) {
    failed += !each[i].is_ok();
    TensorEntry& e = job.entries[i];
    if (each[i].is_ok() && job.device_outputs.size() > i && job.device_outputs[i]) {
      e.output = job.device_outputs[i];
      if (e.handle) e.handle->set_output(job.device_outputs[i], job.host[i].handle->received_splits());
    }
    finish_entry(std::move(e), each[i], batch);
  }
  if (failed > 0) stats_.update([&](RuntimeStats& st) { st.errors += failed; });
}

}  // namespace

StatusOr<std::unique_ptr<DeviceOperations>> make_staged_device_operations(const DeviceOperationsContext& context) {
  const Topology topo = context.backend.topology();
  std::vector<int> everyone(static_cast<size_t>(topo.size));
  for (int r = 0; r < topo.size; ++r) everyone[static_cast<size_t>(r)] = r;
  std::unique_ptr<Backend> own;
  const Status s = context.backend.split(topo.scope.id, everyone, &own);
  if (!s.is_ok()) return Status(s.code(), "making the staged path's transport: " + s.message());
  if (!own) return Status::internal("splitting every rank of a backend left this rank out");
  std::unique_ptr<StagedDeviceOperations> ops(new StagedDeviceOperations(std::move(own), context));
  // Every rank's verdict on its worker's transport, agreed over the engine's
  // collectives: a rank whose start failed would skip the copy-in agreement
  // that the others then wait in. Failed anywhere: the same error on every
  // rank (each CUDA collective fails with it; host ones go on).
  const Status mine = ops->wait_started();
  const StatusOr<std::vector<int>> failed =
      ranks_saying_no(context.backend.collectives(), topo.size, topo.scope, mine.is_ok());
  if (!failed.is_ok())
    return Status(failed.status().code(), "agreeing that the staged path's transport started: " + failed.status().message());
  if (failed.value().empty()) return std::unique_ptr<DeviceOperations>(std::move(ops));
  return Status::unknown_error("the staged path's transport did not start on " + rank_list(failed.value()) +
                               (mine.is_ok() ? std::string() : " (here: " + mine.message() + ")"));
}

}  // namespace chorus::detail
