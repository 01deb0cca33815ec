#include "engine/background_loop.h"

#include "engine/coordinator_side.h"
#include "engine/special_responses.h"
#include "engine/worker_side.h"

namespace chorus::detail {

namespace {
std::unique_ptr<LoopSide> make_side(Backend& backend, const ResponseCache& cache, TensorQueue& queue,
                                    const RuntimeOptions& options, const Topology& topo, const Logger& logger,
                                    SharedStats& stats) {
  if (topo.rank == 0) return std::make_unique<CoordinatorSide>(backend.control(), cache, options, topo, logger, stats);
  return std::make_unique<WorkerSide>(backend.control(), cache, queue, options, topo, logger, stats);
}
}  // namespace

BackgroundLoop::BackgroundLoop(Backend& backend, TensorQueue& queue, const RuntimeOptions& options,
                               const Logger& logger, SharedStats& stats, Timeline& timeline, DeviceSupport device,
                               FaultListener on_device_fault)
    : backend_(backend),
      queue_(queue),
      logger_(logger),
      stats_(stats),
      timeline_(timeline),
      topo_(backend.topology()),
      executor_(backend, options, stats, timeline, logger, std::move(device)),
      waiter_(options, queue),
      watchdog_(options, logger, [&backend](int exit_code) { backend.end_job(exit_code); }),
      cache_(static_cast<size_t>(options.cache_capacity)),
      side_(make_side(backend, cache_, queue, options, topo_, logger, stats)),
      on_device_fault_(std::move(on_device_fault)) {}

void BackgroundLoop::request_shutdown(const std::string& reason) {
  {
    std::lock_guard<std::mutex> lock(reason_mu_);
    if (!shutdown_requested_.load() && requested_reason_.empty()) requested_reason_ = reason;
  }
  shutdown_requested_.store(true);
  queue_.notify();
}

void BackgroundLoop::run() {
  bool device_was_busy = false;
  while (!finished_) {
    if (run_round()) {
      if (timeline_.marks_cycles()) timeline_.instant("cycles", "CYCLE_START", Timeline::Clock::now());
      waiter_.on_progress();
    } else if (!finished_) {
      timeline_.flush();  // idle: a good moment to write
      // Device work finishes on the completion thread, not in a round here:
      // while it runs an answer is due (its caller's next enqueue), and
      // when it ends the short spin starts over, so that enqueue does not
      // find this thread asleep.
      const bool device_busy = executor_.device_in_flight() > 0;
      if (device_was_busy && !device_busy) waiter_.on_progress();
      device_was_busy = device_busy;
      waiter_.wait(queue_.in_flight() > 0 || side_->waiting() || device_busy);
    }
  }
}

bool BackgroundLoop::run_round() {
  bool progressed = false;
  check_device_fault();
  Status s = submit_local_requests(&progressed);
  if (s.is_ok()) s = run_due_lists(&progressed);
  if (s.is_ok()) s = backend_.control().failure();  // a peer the transport found gone
  if (!s.is_ok()) {
    CHORUS_LOG(logger_, kError) << "control plane failed, stopping: " << s.message();
    finish(Status::aborted("Chorus stopped after a control-plane error: " + s.message()));
    return true;
  }
  return progressed;
}

// A device fault ends the job on every rank with its message: this rank
// asks rank 0 to shut down with it (RequestList::shutdown_reason); in a
// process set's engine that ends the set, so the listener ends the job.
void BackgroundLoop::check_device_fault() {
  if (!device_fault_.empty()) return;
  const Status fault = executor_.device_fault();
  if (fault.is_ok()) return;
  device_fault_ = "the GPU operations failed" + topo_.scope.in_text() + ": " + fault.message();
  CHORUS_LOG(logger_, kError) << device_fault_ << "; shutting down";
  request_shutdown();
  if (on_device_fault_) on_device_fault_(device_fault_);
}

Status BackgroundLoop::submit_local_requests(bool* progressed) {
  RequestList mine;
  mine.requests = queue_.take_new_requests();
  side_->take_resends(&mine.requests);
  if (shutdown_requested_.load() && !shutdown_sent_) {
    mine.shutdown = true;
    if (device_fault_.empty()) {
      std::lock_guard<std::mutex> lock(reason_mu_);
      mine.shutdown_reason = requested_reason_;
    } else {
      mine.shutdown_reason = device_fault_;
    }
    shutdown_sent_ = true;
  }
  if (mine.requests.empty() && !mine.shutdown) return Status::ok();
  *progressed = true;
  return side_->submit(std::move(mine));
}

// A worker runs each list as it arrives; rank 0 the one it planned this round.
Status BackgroundLoop::run_due_lists(bool* progressed) {
  using Polled = LoopSide::Polled;
  for (bool more = true; more && !finished_;) {
    ResponseList list;
    Polled polled = Polled::kNothing;
    Status s = side_->poll(&list, &polled);
    if (!s.is_ok()) return s;
    if (polled != Polled::kNothing) *progressed = true;
    if (polled == Polled::kList || polled == Polled::kLastOfRound) execute(list);
    more = polled == Polled::kList;
  }
  if (finished_) return Status::ok();
  if (const std::optional<std::string> silent = side_->silence_reason()) {
    stall_shutdown_ = true;
    finish(Status::aborted("Chorus was shut down (" + *silent + ")"));
  }
  return Status::ok();
}

// Slots name what they held when the coordinator planned the list, which
// is what they hold here before the list runs, as every rank applied the
// same cache updates (the epochs agree): a response early in the list may
// refill a slot that a later one names.
Status BackgroundLoop::name_cached_slots(ResponseList& list) const {
  if (list.cache_epoch != cache_.epoch()) {
    return Status::internal("this rank's response cache is at epoch " + std::to_string(cache_.epoch()) +
                            ", the coordinator's was at " + std::to_string(list.cache_epoch) +
                            ": the caches disagree, so cache slots would name other tensors here");
  }
  for (Response& response : list.responses) {
    for (int32_t slot : response.slots) {
      const Request* cached = cache_.at(slot);
      if (cached == nullptr) {
        return Status::internal("a response names cache slot " + std::to_string(slot) +
                                ", which is empty on this rank");
      }
      response.names.push_back(cached->name);
    }
  }
  return Status::ok();
}

void BackgroundLoop::execute(ResponseList& list) {
  const Status named = name_cached_slots(list);
  if (!named.is_ok()) {
    // Running the list would pair other tensors than the other ranks do, and
    // skipping it would leave them waiting in its collectives: end the job.
    logger_.fatal(named.message());
  }
  if (list.tuned) apply_tuned(*list.tuned);
  for (const Response& response : list.responses) run_response(response);
  hand_slot_changes();  // all of them before the side hears of the list or anything new
  side_->list_ran(list);
  ++lists_run_;
  stats_.update([](RuntimeStats& st) { ++st.negotiation_rounds; });
  if (list.shutdown) {
    stall_shutdown_ = is_stall_shutdown(list.shutdown_reason);
    finish(Status::aborted("Chorus was shut down (" + list.shutdown_reason + ")"));
  }
}

// Every rank at the same point of the response order: the coordinator's
// planning took the new fusion settings already; the cycle time is each
// rank's own wait.
void BackgroundLoop::apply_tuned(const TunedSettings& tuned) {
  waiter_.set_cycle_time_ms(tuned.cycle_time_ms);
  stats_.update([&](InternalStats& st) { st.tuning_applied.push_back({lists_run_, tuned}); });
}

// The order the side hears things in (engine/loop_side.h): the cache's
// changes so far, then the next answered tensor.
void BackgroundLoop::hand_slot_changes() {
  if (cache_.changes().empty()) return;
  side_->slots_changed(cache_.changes());
  cache_.clear_changes();
}

void BackgroundLoop::run_response(const Response& response) {
  std::vector<TensorEntry> entries;
  entries.reserve(response.names.size());
  const bool failed = response.type == ResponseType::kError;
  const bool by_slot = !response.slots.empty();  // then names[i] came from slots[i]
  for (size_t i = 0; i < response.names.size(); ++i) {
    const std::string& name = response.names[i];
    TensorEntry e;
    hand_slot_changes();
    side_->answered(response, i);
    // Every rank updates its cache here, in response order: identical caches.
    if (failed) cache_.erase(name);
    if (queue_.take(name, &e) || stand_in_for_joined(response, name, topo_.rank, logger_, &e)) {
      if (by_slot) {
        cache_.refresh(response.slots[i], e.request);  // the tensor the slot names: no lookup
      } else if (!failed) {
        cache_.put(e.request);
      }
      entries.push_back(std::move(e));
    } else if (!failed) {  // errors may name tensors a joined rank never had
      CHORUS_LOG(logger_, kError)
          << Status::internal("response for tensor '" + name + "', which is not in flight on this rank").message();
    }
  }
  if (entries.empty()) return;
  if (response.type == ResponseType::kAddProcessSet) {
    register_process_sets(backend_, std::move(entries));
  } else {
    watchdog_.entered(response.names);
    executor_.execute(response, std::move(entries));
    watchdog_.left();
  }
}

void BackgroundLoop::finish(const Status& reason) {
  finished_ = true;
  end_reason_ = reason.message();
  executor_.end_device(reason);  // device work negotiated before the end finishes, or fails after a fault
  CompletionBatch batch;
  for (TensorEntry& e : queue_.close(reason)) {
    const Status failed(reason.code(), collective_name(e.request.type) + std::string(" of tensor '") +
                                           e.name() + "' did not complete: " + reason.message());
    finish_entry(std::move(e), failed, batch);
  }
}

}  // namespace chorus::detail
