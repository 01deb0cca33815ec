#include "engine/coordinator_side.h"

#include "fusion/fusion_planner.h"

namespace chorus::detail {

CoordinatorSide::CoordinatorSide(ControlChannel& control, const ResponseCache& cache, const RuntimeOptions& options,
                                 const Topology& topo, const Logger& logger, SharedStats& stats)
    : control_(control),
      cache_(cache),
      options_(options),
      topo_(topo),
      stats_(stats),
      coordinator_(topo.size, topo.scope),
      readiness_(topo.size, cache.capacity()),
      stall_check_(options, topo, logger, std::chrono::steady_clock::now()),
      fusion_threshold_bytes_(options.fusion_threshold_bytes),
      fusion_wait_us_(options.fusion_wait_us) {
  if (!options.autotune) return;
  const TuningPoint start{options.fusion_threshold_bytes, options.fusion_wait_us, options.cycle_time_ms};
  tuner_ = std::make_unique<Autotuner>(
      options, ParameterSearch(start, TuningGrid::standard(), static_cast<int>(options.autotune_samples_per_trial),
                               static_cast<int>(options.autotune_warmup_samples)));
  if (!tuner_->warning().empty()) {
    CHORUS_LOG(logger, kWarning) << tuner_->warning();  // a macro with an if inside: braces
  }
}

Status CoordinatorSide::submit(RequestList mine) {
  use_cache_bits(&mine, cache_, [](int32_t, const Request&) { return true; });
  add_requests(topo_.rank, mine);
  return Status::ok();
}

Status CoordinatorSide::poll(ResponseList* out, Polled* polled) {
  *polled = Polled::kNothing;
  int from = 0;
  std::string bytes;
  while (control_.poll_from_workers(&from, &bytes)) {
    RequestList list;
    Status s = RequestList::parse(bytes, &list, cache_.capacity());
    *polled = Polled::kArrived;
    if (!s.is_ok()) {
      // Nothing was planned from it, so every rank can still stop together,
      // with this message, instead of rank 0 alone.
      note_unreadable(from, s.message());
      continue;
    }
    add_requests(from, list);
  }
  // First: a stall shutdown must not fail a burst that is ready everywhere.
  const auto now = std::chrono::steady_clock::now();
  const std::optional<std::string> stall = stall_check_.check(coordinator_, readiness_, cache_, now);
  if (stall && global_shutdown_reason_.empty()) global_shutdown_reason_ = *stall;
  if (tuner_) tune(out, now);
  out->responses = take_fusable_burst();
  if (!global_shutdown_reason_.empty()) {
    out->shutdown = true;
    out->shutdown_reason = global_shutdown_reason_;
  }
  out->resend.swap(pending_resends_);
  out->cache_epoch = cache_.epoch();
  // A joined rank waits too (for the others to join): it hears rank 0 while
  // the others train on without collectives (an evaluation, a save).
  const bool waiting = !idle() || coordinator_.any_joined();
  const bool heartbeat = stall_check_.heartbeat_due(waiting, now);
  if (out->responses.empty() && out->resend.empty() && !out->shutdown && !out->tuned && !heartbeat) {
    return Status::ok();
  }
  *polled = Polled::kLastOfRound;
  if (topo_.size > 1) {
    Status s = control_.send_to_workers(out->serialize());
    if (!s.is_ok()) return s;
    stall_check_.sent(now);
  }
  return Status::ok();
}

void CoordinatorSide::add_requests(int from_rank, const RequestList& list) {
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
  if (list.shutdown) note_shutdown(from_rank, list.shutdown_reason);
}

void CoordinatorSide::note_shutdown(int from_rank, const std::string& reason) {
  if (!global_shutdown_reason_.empty()) return;
  const std::string who = "rank " + std::to_string(topo_.scope.world_rank(from_rank));
  if (!reason.empty()) {
    global_shutdown_reason_ = who + ": " + reason;  // a device fault: every rank reports it
  } else {
    global_shutdown_reason_ = topo_.scope.id == 0 ? who + " called shutdown()"
                                                  : who + " removed " + topo_.scope.describe() + " or shut down";
  }
}

void CoordinatorSide::note_unreadable(int from_rank, const std::string& what) {
  if (!global_shutdown_reason_.empty()) return;
  global_shutdown_reason_ = "rank " + std::to_string(topo_.scope.world_rank(0)) +
                            " could not read the request list rank " +
                            std::to_string(topo_.scope.world_rank(from_rank)) + " sent" + topo_.scope.in_text() +
                            " (" + what + "; are all ranks running the same Chorus build?)";
}

// A full request takes along what other ranks sent for the same tensor by
// cache bits (say, this rank changed the tensor's shape: the Coordinator
// then reports the mismatch); a join takes every partly set slot, since
// tensors may now complete without the joined rank.
void CoordinatorSide::add_full(Request request) {
  if (request.type == CollectiveType::kJoin) {
    for (int32_t slot : readiness_.partial_slots()) leave_fast_path(slot);
  } else if (!readiness_.idle()) {
    leave_fast_path(cache_.slot_of(request.name));
  }
  coordinator_.add(std::move(request));
}

void CoordinatorSide::add_cached(int rank, int32_t slot) {
  const Request& spec = *cache_.at(slot);
  if (coordinator_.any_joined() || !negotiable_by_bits(spec) || coordinator_.waiting_for(spec.name) ||
      coordinator_.failed_this_round(spec.name)) {
    Request full = spec;  // the Coordinator's rules apply: it gets the request itself
    full.rank = rank;
    coordinator_.add(std::move(full));
    return;
  }
  switch (readiness_.mark(slot, rank)) {
    case CachedReadiness::Mark::kWaiting:
      return;
    case CachedReadiness::Mark::kReady:
      bits_ready_.push_back(slot);
      return;
    case CachedReadiness::Mark::kDuplicate: {
      leave_fast_path(slot);  // the Coordinator reports the tensor submitted twice
      Request twice = spec;
      twice.rank = rank;
      coordinator_.add(std::move(twice));
      return;
    }
  }
}

// Between lists the marks of a slot were counted against what it holds now.
void CoordinatorSide::leave_fast_path(int32_t slot) {
  if (readiness_.partial(slot)) leave_fast_path(slot, *cache_.at(slot));
}

// Hands a partly set slot's marks to the Coordinator as full requests for `spec`.
void CoordinatorSide::leave_fast_path(int32_t slot, const Request& spec) {
  if (!readiness_.partial(slot)) return;
  const CachedReadiness::Dropped marks = readiness_.drop(slot);
  for (int rank : marks.ranks) {
    Request r = spec;
    r.rank = rank;
    coordinator_.add(std::move(r), marks.first_seen);
  }
}

// A slot's marks were counted against its content before the list ran: the
// `old` of its first change (engine/loop_side.h). A later change of the same
// slot finds it no longer partial.
void CoordinatorSide::slots_changed(const std::vector<ResponseCache::SlotChange>& changes) {
  for (const ResponseCache::SlotChange& c : changes) leave_fast_path(c.slot, c.old);
}

// Ready tensors go out at once when nothing else is on its way; while other
// tensors are partly submitted (a burst still arriving) they wait up to
// fusion_wait_us so the burst fuses into one response.
std::vector<Response> CoordinatorSide::take_fusable_burst() {
  std::vector<ReadyTensor> ready = coordinator_.take_ready();
  const bool held_none = held_.empty() && held_slots_.empty();
  if ((!ready.empty() || !bits_ready_.empty()) && held_none) held_since_ = std::chrono::steady_clock::now();
  held_.insert(held_.end(), std::make_move_iterator(ready.begin()), std::make_move_iterator(ready.end()));
  held_slots_.insert(held_slots_.end(), bits_ready_.begin(), bits_ready_.end());
  bits_ready_.clear();
  if (held_.empty() && held_slots_.empty()) return {};
  const double held_us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - held_since_).count();
  if (!idle() && held_us < fusion_wait_us_ && global_shutdown_reason_.empty()) return {};
  std::vector<Response> plan;
  if (!held_.empty()) {
    std::vector<ReadyTensor> full;
    full.swap(held_);
    held_.reserve(full.size());  // bursts tend to repeat: grow once
    plan = plan_fusion(std::move(full), fusion_threshold_bytes_);
  }
  if (!held_slots_.empty()) {
    std::vector<Response> by_slot = plan_fusion(held_slots_, cache_, fusion_threshold_bytes_);
    plan.insert(plan.end(), std::make_move_iterator(by_slot.begin()), std::make_move_iterator(by_slot.end()));
    held_slots_.clear();  // keeps its capacity: bursts repeat
  }
  return plan;
}

// The tuner samples the bytes this rank allreduced; a change of settings
// goes to every rank in this list, and rank 0 plans with it from now on.
void CoordinatorSide::tune(ResponseList* out, std::chrono::steady_clock::time_point now) {
  if (!tuner_->sample_due(now)) return;
  const bool between_bursts = idle() && held_.empty() && held_slots_.empty() && bits_ready_.empty();
  out->tuned = tuner_->observe(stats_.get().bytes_allreduced, now, between_bursts);
  fusion_threshold_bytes_ = tuner_->current().fusion_threshold_bytes;
  fusion_wait_us_ = tuner_->current().fusion_wait_us;
}

}  // namespace chorus::detail
