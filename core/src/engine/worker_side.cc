#include "engine/worker_side.h"

namespace chorus::detail {

WorkerSide::WorkerSide(ControlChannel& control, const ResponseCache& cache, TensorQueue& queue,
                       const RuntimeOptions& options, const Topology& topo, const Logger& logger, SharedStats& stats)
    : control_(control),
      cache_(cache),
      queue_(queue),
      rank_(topo.rank),
      scope_(topo.scope),
      stats_(stats),
      sent_(cache.capacity()),
      watch_(options, topo, logger, std::chrono::steady_clock::now()) {}

void WorkerSide::take_resends(std::vector<Request>* into) {
  if (to_resend_.empty()) return;
  into->insert(into->end(), to_resend_.begin(), to_resend_.end());
  to_resend_.clear();
}

Status WorkerSide::submit(RequestList mine) {
  const uint64_t epoch = cache_.epoch();
  use_cache_bits(&mine, cache_, [&](int32_t slot, const Request& r) { return sent_.try_send(slot, epoch, r.name); });
  if (!mine.cached.empty()) {
    const auto hits = static_cast<int64_t>(mine.cached.count());
    stats_.update([&](RuntimeStats& st) { st.cache_hits += hits; });
  }
  return control_.send_to_coordinator(mine.serialize());
}

Status WorkerSide::poll(ResponseList* list, Polled* polled) {
  *polled = Polled::kNothing;
  std::string bytes;
  if (!control_.poll_from_coordinator(&bytes)) return Status::ok();
  *polled = Polled::kList;
  const Status s = ResponseList::parse(bytes, list, cache_.capacity());
  return s.is_ok() ? s : leave_unread(s.message(), list);
}

// Skipping the list would leave the others inside its collectives, so this
// rank stops and rank 0 stops the rest, all with one message. Rank 0 reads
// the request only between lists: ranks inside one of this list's
// collectives stay there until this rank's close gives up and ends the job
// (engine/job_end.h).
Status WorkerSide::leave_unread(const std::string& why, ResponseList* list) {
  RequestList report;
  report.shutdown = true;
  report.shutdown_reason = "could not read the response list rank " + std::to_string(scope_.world_rank(0)) + " sent" +
                           scope_.in_text() + " (" + why + "; are all ranks running the same Chorus build?)";
  report.cache_epoch = cache_.epoch();
  Status s = control_.send_to_coordinator(report.serialize());
  if (!s.is_ok()) return s;
  *list = ResponseList();
  list->shutdown = true;
  list->shutdown_reason = "rank " + std::to_string(scope_.world_rank(rank_)) + ": " + report.shutdown_reason;
  list->cache_epoch = cache_.epoch();  // nothing to run: it only ends the loop, as rank 0's would
  return Status::ok();
}

// This rank's bit for a changing slot, if one is out, is kept by name.
void WorkerSide::slots_changed(const std::vector<ResponseCache::SlotChange>& changes) {
  for (const ResponseCache::SlotChange& c : changes) sent_.slot_changing(c.slot);
}

void WorkerSide::answered(const Response& response, size_t index) {
  if (sent_.empty()) return;
  const std::string& name = response.names[index];
  const bool by_slot = !response.slots.empty();  // then names[i] came from slots[i]
  sent_.completed(name, by_slot ? response.slots[index] : cache_.slot_of(name));
}

void WorkerSide::list_ran(const ResponseList& list) {
  for (const Resend& x : list.resend) {
    if (x.rank != rank_) continue;
    const std::optional<std::string> name = sent_.take_resend(x.slot, x.epoch);
    if (!name) continue;
    Request full;
    if (queue_.request_of(*name, &full)) to_resend_.push_back(std::move(full));
    stats_.update([](RuntimeStats& st) { ++st.cache_resends; });
  }
  if (!to_resend_.empty()) queue_.notify();
  watch_.heard(std::chrono::steady_clock::now());  // after running it: a long collective is no silence
}

}  // namespace chorus::detail
