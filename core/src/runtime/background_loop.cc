#include "runtime/background_loop.h"

#include <algorithm>

#include "fusion/fusion_planner.h"
#include "negotiation/collective_traits.h"
#include "negotiation/stall_schedule.h"
#include "runtime/special_responses.h"

namespace chorus::detail {

BackgroundLoop::BackgroundLoop(Backend& backend, TensorQueue& queue, const RuntimeOptions& options,
                               const Logger& logger, SharedStats& stats, Timeline& timeline)
    : backend_(backend),
      queue_(queue),
      options_(options),
      logger_(logger),
      stats_(stats),
      timeline_(timeline),
      topo_(backend.topology()),
      executor_(backend, options, stats, timeline, logger),
      waiter_(options, queue),
      watchdog_(options, logger, [&backend](int exit_code) { backend.end_job(exit_code); }),
      cache_(static_cast<size_t>(options.cache_capacity)),
      sent_(topo_.rank == 0 ? 0 : static_cast<size_t>(options.cache_capacity)) {  // rank 0 sends no bits
  const auto now = std::chrono::steady_clock::now();
  if (topo_.rank == 0) {
    coordinator_ = std::make_unique<Coordinator>(topo_.size, topo_.scope);
    readiness_ = std::make_unique<CachedReadiness>(topo_.size, cache_.capacity());
    stall_check_ = std::make_unique<CoordinatorStallCheck>(options, topo_, logger, now);
  } else {
    watch_ = std::make_unique<CoordinatorWatch>(options, topo_, logger, now);
  }
  cache_.set_listener(this);
}

void BackgroundLoop::request_shutdown() {
  shutdown_requested_.store(true);
  queue_.notify();
}

void BackgroundLoop::run() {
  while (!finished_) {
    if (run_round()) {
      waiter_.on_progress();
    } else if (!finished_) {
      timeline_.flush();  // idle: a good moment to write
      waiter_.wait(queue_.in_flight() > 0 || (coordinator_ && !coordinator_idle()));
    }
  }
}

bool BackgroundLoop::run_round() {
  bool progressed = false;
  Status s = send_local_requests(&progressed);
  if (s.is_ok()) s = coordinator_ ? coordinate(&progressed) : receive_responses(&progressed);
  if (s.is_ok()) s = backend_.control().failure();  // a peer the transport found gone
  if (!s.is_ok()) {
    CHORUS_LOG(logger_, kError) << "control plane failed, stopping: " << s.message();
    finish(Status::aborted("Chorus stopped after a control-plane error: " + s.message()));
    return true;
  }
  return progressed;
}

Status BackgroundLoop::send_local_requests(bool* progressed) {
  RequestList mine;
  mine.requests = queue_.take_new_requests();
  mine.requests.insert(mine.requests.end(), to_resend_.begin(), to_resend_.end());
  to_resend_.clear();
  if (shutdown_requested_.load() && !shutdown_sent_) {
    mine.shutdown = true;
    shutdown_sent_ = true;
  }
  if (mine.requests.empty() && !mine.shutdown) return Status::ok();
  *progressed = true;
  use_cache_bits(&mine);
  if (coordinator_) {
    add_requests(topo_.rank, mine);
    return Status::ok();
  }
  return backend_.control().send_to_coordinator(mine.serialize());
}

namespace {
// Collectives whose cached signature says all a response needs: their
// tensors can be negotiated by cache bits alone. Groups wait for each other
// in the Coordinator; joins and registrations are one-off.
bool negotiable_by_bits(const Request& r) { return r.group.empty() && traits_of(r.type).by_cache_bits; }
}  // namespace

// Requests whose signature every rank has cached travel as cache bits.
void BackgroundLoop::use_cache_bits(RequestList* list) {
  list->cache_epoch = cache_.epoch();
  if (cache_.capacity() == 0) return;
  std::vector<Request> full;
  for (Request& r : list->requests) {
    if (negotiable_by_bits(r)) {
      // Rank 0's bits are counted at once, against its own cache: never stale.
      const std::optional<int32_t> slot = cache_.lookup(r);
      if (slot && (coordinator_ || sent_.try_send(*slot, list->cache_epoch, r.name))) {
        list->cached.add(*slot);
        continue;
      }
    }
    full.push_back(std::move(r));
  }
  if (!coordinator_ && !list->cached.empty()) {
    const auto hits = static_cast<int64_t>(list->cached.count());
    stats_.update([&](RuntimeStats& st) { st.cache_hits += hits; });
  }
  list->requests.swap(full);
}

void BackgroundLoop::add_requests(int from_rank, const RequestList& list) {
  for (const Request& r : list.requests) add_full(r);
  int64_t hits = 0;
  list.cached.for_each([&](int32_t slot) {
    if (cache_.unchanged_since(slot, list.cache_epoch)) {
      add_cached(from_rank, slot);
      ++hits;
    } else {
      pending_resends_.push_back({from_rank, slot, list.cache_epoch});  // the slot changed meanwhile
    }
  });
  if (hits > 0 && from_rank != topo_.rank) stats_.update([&](RuntimeStats& st) { st.cache_hits += hits; });
  if (list.shutdown && global_shutdown_reason_.empty()) {
    const std::string who = "rank " + std::to_string(topo_.scope.world_rank(from_rank));
    global_shutdown_reason_ = topo_.scope.id == 0 ? who + " called shutdown()"
                                                  : who + " removed " + topo_.scope.describe() + " or shut down";
  }
}

// A full request takes along what other ranks sent for the same tensor by
// cache bits (say, this rank changed the tensor's shape: the Coordinator
// then reports the mismatch); a join takes every partly set slot, since
// tensors may now complete without the joined rank.
void BackgroundLoop::add_full(Request request) {
  if (request.type == CollectiveType::kJoin) {
    for (int32_t slot : readiness_->partial_slots()) leave_fast_path(slot);
  } else if (!readiness_->idle()) {
    leave_fast_path(cache_.slot_of(request.name));
  }
  coordinator_->add(std::move(request));
}

void BackgroundLoop::add_cached(int rank, int32_t slot) {
  const Request& spec = *cache_.at(slot);
  if (coordinator_->any_joined() || !negotiable_by_bits(spec) || coordinator_->waiting_for(spec.name)) {
    Request full = spec;  // the Coordinator's rules apply: it gets the request itself
    full.rank = rank;
    coordinator_->add(std::move(full));
    return;
  }
  switch (readiness_->mark(slot, rank)) {
    case CachedReadiness::Mark::kWaiting:
      return;
    case CachedReadiness::Mark::kReady:
      bits_ready_.push_back(slot);
      return;
    case CachedReadiness::Mark::kDuplicate: {
      leave_fast_path(slot);  // the Coordinator reports the tensor submitted twice
      Request twice = spec;
      twice.rank = rank;
      coordinator_->add(std::move(twice));
      return;
    }
  }
}

// Hands a partly set slot's marks to the Coordinator as full requests.
void BackgroundLoop::leave_fast_path(int32_t slot) {
  if (!readiness_->partial(slot)) return;
  const CachedReadiness::Dropped marks = readiness_->drop(slot);
  const Request& spec = *cache_.at(slot);
  for (int rank : marks.ranks) {
    Request r = spec;
    r.rank = rank;
    coordinator_->add(std::move(r), marks.first_seen);
  }
}

// Every rank changes its cache at the same point of the response order.
// Bits counted against the old content leave the fast path (coordinator);
// this rank's bit for it, if one is out, is kept by name (worker).
void BackgroundLoop::before_slot_change(int32_t slot) {
  if (coordinator_) {
    leave_fast_path(slot);
  } else {
    sent_.slot_changing(slot);
  }
}

Status BackgroundLoop::coordinate(bool* progressed) {
  int from = 0;
  std::string bytes;
  while (backend_.control().poll_from_workers(&from, &bytes)) {
    RequestList list;
    Status s = RequestList::parse(bytes, &list, cache_.capacity());
    if (!s.is_ok()) return Status::unknown_error("from rank " + std::to_string(from) + ": " + s.message());
    add_requests(from, list);
    *progressed = true;
  }
  // First: a stall shutdown must not fail a burst that is ready everywhere.
  const auto now = std::chrono::steady_clock::now();
  const std::string stall = stall_check_->check(*coordinator_, *readiness_, cache_, now);
  if (!stall.empty() && global_shutdown_reason_.empty()) global_shutdown_reason_ = stall;
  ResponseList out;
  out.responses = take_fusable_burst();
  if (!global_shutdown_reason_.empty()) {
    out.shutdown = true;
    out.shutdown_reason = global_shutdown_reason_;
  }
  out.resend.swap(pending_resends_);
  out.cache_epoch = cache_.epoch();
  // A joined rank waits too (for the others to join): it hears rank 0 while
  // the others train on without collectives (an evaluation, a save).
  const bool waiting = !coordinator_idle() || coordinator_->any_joined();
  const bool heartbeat = stall_check_->heartbeat_due(waiting, now);
  if (out.responses.empty() && out.resend.empty() && !out.shutdown && !heartbeat) return Status::ok();
  *progressed = true;
  if (topo_.size > 1) {
    Status s = backend_.control().send_to_workers(out.serialize());
    if (!s.is_ok()) return s;
    stall_check_->sent(now);
  }
  execute(out);
  return Status::ok();
}

// Ready tensors go out at once when nothing else is on its way; while other
// tensors are partly submitted (a burst still arriving) they wait up to
// fusion_wait_us so the burst fuses into one response.
std::vector<Response> BackgroundLoop::take_fusable_burst() {
  std::vector<ReadyTensor> ready = coordinator_->take_ready();
  const bool held_none = held_.empty() && held_slots_.empty();
  if ((!ready.empty() || !bits_ready_.empty()) && held_none) held_since_ = std::chrono::steady_clock::now();
  held_.insert(held_.end(), std::make_move_iterator(ready.begin()), std::make_move_iterator(ready.end()));
  held_slots_.insert(held_slots_.end(), bits_ready_.begin(), bits_ready_.end());
  bits_ready_.clear();
  if (held_.empty() && held_slots_.empty()) return {};
  const double held_us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - held_since_).count();
  if (!coordinator_idle() && held_us < options_.fusion_wait_us && global_shutdown_reason_.empty()) return {};
  std::vector<Response> plan;
  if (!held_.empty()) {
    std::vector<ReadyTensor> full;
    full.swap(held_);
    held_.reserve(full.size());  // bursts tend to repeat: grow once
    plan = plan_fusion(std::move(full), options_.fusion_threshold_bytes);
  }
  if (!held_slots_.empty()) {
    std::vector<Response> by_slot = plan_fusion(held_slots_, cache_, options_.fusion_threshold_bytes);
    plan.insert(plan.end(), std::make_move_iterator(by_slot.begin()), std::make_move_iterator(by_slot.end()));
    held_slots_.clear();  // keeps its capacity: bursts repeat
  }
  return plan;
}

Status BackgroundLoop::receive_responses(bool* progressed) {
  std::string bytes;
  while (!finished_ && backend_.control().poll_from_coordinator(&bytes)) {
    ResponseList list;
    Status s = ResponseList::parse(bytes, &list, cache_.capacity());
    if (!s.is_ok()) return Status::unknown_error("from the coordinator: " + s.message());
    execute(list);
    watch_->heard(std::chrono::steady_clock::now());  // after running it: a long collective is no silence
    *progressed = true;
  }
  if (finished_) return Status::ok();
  const std::string silent = watch_->check(queue_, std::chrono::steady_clock::now());
  if (!silent.empty()) {
    stall_shutdown_ = true;
    finish(Status::aborted("Chorus was shut down (" + silent + ")"));
  }
  return Status::ok();
}

// Slots name what they held when the coordinator planned the list, which
// is what they hold here before the list runs, as every rank applied the
// same cache updates (the epochs agree): a response early in the list may
// refill a slot that a later one names.
Status BackgroundLoop::name_cached_slots(ResponseList& list) const {
  if (list.cache_epoch != cache_.epoch()) {
    return Status::unknown_error("internal: this rank's response cache is at epoch " + std::to_string(cache_.epoch()) +
                                 ", the coordinator's was at " + std::to_string(list.cache_epoch) +
                                 ": the caches disagree, so cache slots would name other tensors here");
  }
  for (Response& response : list.responses) {
    for (int32_t slot : response.slots) {
      const Request* cached = cache_.at(slot);
      if (cached == nullptr) {
        return Status::unknown_error("internal: a response names cache slot " + std::to_string(slot) +
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
  for (const Response& response : list.responses) {
    std::vector<TensorEntry> entries;
    entries.reserve(response.names.size());
    const bool failed = response.type == ResponseType::kError;
    const bool by_slot = !response.slots.empty();  // then names[i] came from slots[i]
    for (size_t i = 0; i < response.names.size(); ++i) {
      const std::string& name = response.names[i];
      TensorEntry e;
      if (!sent_.empty()) sent_.completed(name, by_slot ? response.slots[i] : cache_.slot_of(name));
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
        CHORUS_LOG(logger_, kError) << "internal: response for tensor '" << name
                                    << "', which is not in flight on this rank";
      }
    }
    if (entries.empty()) continue;
    if (response.type == ResponseType::kAddProcessSet) {
      register_process_sets(backend_, std::move(entries));
    } else {
      watchdog_.entered(response.names);
      executor_.execute(response, std::move(entries));
      watchdog_.left();
    }
  }
  resend_stale(list.resend);
  stats_.update([](RuntimeStats& st) { ++st.negotiation_rounds; });
  if (list.shutdown) {
    stall_shutdown_ = is_stall_shutdown(list.shutdown_reason);
    finish(Status::aborted("Chorus was shut down (" + list.shutdown_reason + ")"));
  }
}

void BackgroundLoop::resend_stale(const std::vector<Resend>& resend) {
  for (const Resend& x : resend) {
    if (x.rank != topo_.rank) continue;
    const std::optional<std::string> name = sent_.take_resend(x.slot, x.epoch);
    if (!name) continue;
    Request full;
    if (queue_.request_of(*name, &full)) to_resend_.push_back(std::move(full));
    stats_.update([](RuntimeStats& st) { ++st.cache_resends; });
  }
  if (!to_resend_.empty()) queue_.notify();
}

void BackgroundLoop::finish(const Status& reason) {
  finished_ = true;
  end_reason_ = reason.message();
  CompletionBatch batch;
  for (TensorEntry& e : queue_.close(reason)) {
    const Status failed(reason.code(), collective_name(e.request.type) + std::string(" of tensor '") +
                                           e.name() + "' did not complete: " + reason.message());
    finish_entry(std::move(e), failed, batch);
  }
}

}  // namespace chorus::detail
