#include "runtime/background_loop.h"

#include <sstream>

#include "fusion/fusion_planner.h"

namespace chorus::detail {

namespace {

std::string ranks_text(const std::vector<int>& ranks) {
  std::ostringstream out;
  for (size_t i = 0; i < ranks.size(); ++i) out << (i ? ", " : "") << ranks[i];
  return out.str();
}

}  // namespace

BackgroundLoop::BackgroundLoop(Backend& backend, TensorQueue& queue, const RuntimeOptions& options,
                               const Logger& logger, SharedStats& stats, Timeline& timeline)
    : backend_(backend),
      queue_(queue),
      options_(options),
      logger_(logger),
      stats_(stats),
      timeline_(timeline),
      topo_(backend.topology()),
      executor_(backend.data(), topo_.rank, topo_.size, stats, timeline, logger),
      waiter_(options, queue),
      cache_(static_cast<size_t>(options.cache_capacity)),
      last_stall_check_(std::chrono::steady_clock::now()) {
  if (topo_.rank == 0) coordinator_ = std::make_unique<Coordinator>(topo_.size, topo_.scope);
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
      waiter_.wait(queue_.in_flight() > 0 || (coordinator_ && !coordinator_->idle()));
    }
  }
}

bool BackgroundLoop::run_round() {
  bool progressed = false;
  Status s = send_local_requests(&progressed);
  if (s.is_ok()) s = coordinator_ ? coordinate(&progressed) : receive_responses(&progressed);
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
  if (coordinator_) {
    add_requests(topo_.rank, mine);
    return Status::ok();
  }
  use_cache_keys(&mine);
  return backend_.control().send_to_coordinator(mine.serialize());
}

// Requests whose signature every rank has cached travel as keys.
void BackgroundLoop::use_cache_keys(RequestList* list) {
  std::vector<Request> full;
  for (Request& r : list->requests) {
    if (auto key = cache_.lookup(r)) {
      list->cached.push_back(*key);
      sent_keys_[r.name] = *key;
    } else {
      full.push_back(std::move(r));
    }
  }
  if (!list->cached.empty()) {
    const auto hits = static_cast<int64_t>(list->cached.size());
    stats_.update([&](RuntimeStats& st) { st.cache_hits += hits; });
  }
  list->requests.swap(full);
}

void BackgroundLoop::add_requests(int from_rank, const RequestList& list) {
  for (const Request& r : list.requests) coordinator_->add(r);
  int64_t hits = 0;
  for (const CacheKey& key : list.cached) {
    if (const Request* cached = cache_.resolve(key)) {
      Request r = *cached;
      r.rank = from_rank;
      coordinator_->add(std::move(r));
      ++hits;
    } else {
      pending_resends_.push_back({from_rank, key});  // the slot was refilled meanwhile
    }
  }
  if (hits > 0) stats_.update([&](RuntimeStats& st) { st.cache_hits += hits; });
  if (list.shutdown && global_shutdown_reason_.empty()) {
    const std::string who = "rank " + std::to_string(topo_.scope.world_rank(from_rank));
    global_shutdown_reason_ = topo_.scope.id == 0 ? who + " called shutdown()"
                                                  : who + " removed " + topo_.scope.describe() + " or shut down";
  }
}

Status BackgroundLoop::coordinate(bool* progressed) {
  int from = 0;
  std::string bytes;
  while (backend_.control().poll_from_workers(&from, &bytes)) {
    RequestList list;
    Status s = RequestList::parse(bytes, &list);
    if (!s.is_ok()) return Status::unknown_error("from rank " + std::to_string(from) + ": " + s.message());
    add_requests(from, list);
    *progressed = true;
  }
  check_stalls();  // first: a stall shutdown must not fail a burst that is ready everywhere
  ResponseList out;
  out.responses = plan_fusion(take_fusable_burst(), options_.fusion_threshold_bytes);
  if (!global_shutdown_reason_.empty()) {
    out.shutdown = true;
    out.shutdown_reason = global_shutdown_reason_;
  }
  out.resend.swap(pending_resends_);
  if (out.responses.empty() && out.resend.empty() && !out.shutdown) return Status::ok();
  *progressed = true;
  if (topo_.size > 1) {
    Status s = backend_.control().send_to_workers(out.serialize());
    if (!s.is_ok()) return s;
  }
  execute(out);
  return Status::ok();
}

// Ready tensors go out at once when nothing else is on its way; while other
// tensors are partly submitted (a burst still arriving) they wait up to
// fusion_wait_us so the burst fuses into one response.
std::vector<ReadyTensor> BackgroundLoop::take_fusable_burst() {
  std::vector<ReadyTensor> ready = coordinator_->take_ready();
  if (!ready.empty() && held_.empty()) held_since_ = std::chrono::steady_clock::now();
  held_.insert(held_.end(), std::make_move_iterator(ready.begin()), std::make_move_iterator(ready.end()));
  if (held_.empty()) return {};
  const double held_us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - held_since_).count();
  if (!coordinator_->idle() && held_us < options_.fusion_wait_us && global_shutdown_reason_.empty()) return {};
  std::vector<ReadyTensor> out;
  out.swap(held_);
  held_.reserve(out.size());
  return out;
}

void BackgroundLoop::check_stalls() {
  if (options_.stall_check_seconds <= 0 || coordinator_->idle()) return;
  const auto now = std::chrono::steady_clock::now();
  if (std::chrono::duration<double>(now - last_stall_check_).count() < options_.stall_check_seconds) return;
  last_stall_check_ = now;
  std::ostringstream shutdown_why;
  for (const StalledTensor& t : coordinator_->stalled(now, options_.stall_check_seconds)) {
    std::ostringstream line;
    line << "tensor '" << t.name << "'" << topo_.scope.in_text() << " has waited " << static_cast<int64_t>(t.waiting_seconds)
         << " s: submitted by ranks " << ranks_text(t.submitted_ranks) << ", missing on ranks "
         << ranks_text(t.missing_ranks);
    CHORUS_LOG(logger_, kWarning) << "stall: " << line.str()
                                  << " (do all ranks enqueue the same names in a reachable order?)";
    if (options_.stall_shutdown_seconds > 0 && t.waiting_seconds >= options_.stall_shutdown_seconds) {
      shutdown_why << (shutdown_why.tellp() > 0 ? "; " : "") << line.str();
    }
  }
  if (shutdown_why.tellp() > 0 && global_shutdown_reason_.empty()) {
    global_shutdown_reason_ = "stall shutdown after " + std::to_string(options_.stall_shutdown_seconds) +
                              " s: " + shutdown_why.str();
  }
}

Status BackgroundLoop::receive_responses(bool* progressed) {
  std::string bytes;
  while (!finished_ && backend_.control().poll_from_coordinator(&bytes)) {
    ResponseList list;
    Status s = ResponseList::parse(bytes, &list);
    if (!s.is_ok()) return Status::unknown_error("from the coordinator: " + s.message());
    execute(list);
    *progressed = true;
  }
  return Status::ok();
}

void BackgroundLoop::execute(const ResponseList& list) {
  for (const Response& response : list.responses) {
    std::vector<TensorEntry> entries;
    entries.reserve(response.names.size());
    const bool failed = response.type == ResponseType::kError;
    for (const std::string& name : response.names) {
      TensorEntry e;
      sent_keys_.erase(name);
      // Every rank updates its cache here, in response order: identical caches.
      if (failed) cache_.erase(name);
      if (queue_.take(name, &e) || stand_in_for_joined(response, name, &e)) {
        if (!failed) cache_.put(e.request);
        entries.push_back(std::move(e));
      } else if (!failed) {  // errors may name tensors a joined rank never had
        CHORUS_LOG(logger_, kError) << "internal: response for tensor '" << name
                                    << "', which is not in flight on this rank";
      }
    }
    if (entries.empty()) continue;
    if (response.type == ResponseType::kAddProcessSet) {
      split_process_sets(std::move(entries));
    } else {
      executor_.execute(response, std::move(entries));
    }
  }
  resend_stale(list.resend);
  stats_.update([](RuntimeStats& st) { ++st.negotiation_rounds; });
  if (list.shutdown) {
    finish(Status::aborted("Chorus was shut down (" + list.shutdown_reason + ")"));
  }
}

// Every rank reached the registration at this point of the response order:
// split the backend for the new set here (a collective over all ranks).
void BackgroundLoop::split_process_sets(std::vector<TensorEntry> entries) {
  CompletionBatch batch;
  for (TensorEntry& e : entries) {
    Status s = Status::unknown_error("internal: a process-set registration without its split");
    if (e.process_set_split) {
      ProcessSetSplit& split = *e.process_set_split;
      s = backend_.split(split.id, split.members, &split.backend);
      if (!s.is_ok()) s = Status(s.code(), "registering process set " + std::to_string(split.id) + ": " + s.message());
    }
    finish_entry(std::move(e), s, batch);
  }
}

// This rank joined and never submitted `name`: it takes part with zeros of
// the shape the other ranks agreed on, so their allreduce can run.
bool BackgroundLoop::stand_in_for_joined(const Response& response, const std::string& name, TensorEntry* out) {
  for (const Request& spec : response.joined_specs) {
    if (spec.name != name) continue;
    std::shared_ptr<Tensor> zeros;
    try {
      if (!HostOpContext().allocate_zeros(TensorShape(spec.shape), spec.dtype, &zeros).is_ok()) zeros.reset();
    } catch (const std::bad_alloc&) {
      zeros.reset();
    }
    if (!zeros) {  // the other ranks are about to run this allreduce with us
      logger_.fatal("allreduce of tensor '" + name + "' " + TensorShape(spec.shape).to_string() +
                    ": this rank joined and has no memory for its stand-in zeros");
    }
    out->request = spec;
    out->request.rank = topo_.rank;
    out->input = zeros;
    out->output = zeros;
    out->enqueued = std::chrono::steady_clock::now();
    return true;
  }
  return false;
}

void BackgroundLoop::resend_stale(const std::vector<Resend>& resend) {
  for (const Resend& x : resend) {
    if (x.rank != topo_.rank) continue;
    for (auto it = sent_keys_.begin(); it != sent_keys_.end(); ++it) {
      if (!(it->second == x.key)) continue;
      Request full;
      if (queue_.request_of(it->first, &full)) to_resend_.push_back(std::move(full));
      sent_keys_.erase(it);
      stats_.update([](RuntimeStats& st) { ++st.cache_resends; });
      break;
    }
  }
  if (!to_resend_.empty()) queue_.notify();
}

void BackgroundLoop::finish(const Status& reason) {
  finished_ = true;
  CompletionBatch batch;
  for (TensorEntry& e : queue_.close(reason)) {
    const Status failed(reason.code(), collective_name(e.request.type) + std::string(" of tensor '") +
                                           e.name() + "' did not complete: " + reason.message());
    finish_entry(std::move(e), failed, batch);
  }
}

}  // namespace chorus::detail
