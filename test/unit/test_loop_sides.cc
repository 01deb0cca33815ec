// The two sides of the background loop, driven directly: a scripted control
// channel brings the workers' request lists (or rank 0's response lists),
// and the test plays the loop's part of running a list: it changes the
// response cache and hands the side the recorded changes, in the order
// engine/loop_side.h promises. The subtle rule checked here: bits counted
// against a slot's old content leave the fast path as full requests for
// the OLD tensor, whatever order the other ranks' messages come in.
#include <catch2/catch.hpp>

#include <algorithm>
#include <deque>
#include <utility>

#include "entry_helpers.h"
#include "engine/coordinator_side.h"
#include "engine/worker_side.h"

using namespace chorus;
using namespace chorus::detail;

namespace {

using test::req;

// The loop's part after its cache updates: the recorded changes, handed over.
void hand_changes(ResponseCache& cache, LoopSide& side) {
  side.slots_changed(cache.changes());
  cache.clear_changes();
}

// Messages in, messages out: nothing travels.
class ScriptedChannel final : public ControlChannel {
 public:
  Status send_to_coordinator(std::string bytes) override {
    to_coordinator.push_back(std::move(bytes));
    return Status::ok();
  }
  bool poll_from_workers(int* from, std::string* bytes) override {
    if (from_workers.empty()) return false;
    *from = from_workers.front().first;
    *bytes = std::move(from_workers.front().second);
    from_workers.pop_front();
    return true;
  }
  Status send_to_workers(const std::string& bytes) override {
    to_workers.push_back(bytes);
    return Status::ok();
  }
  bool poll_from_coordinator(std::string* bytes) override {
    if (from_coordinator.empty()) return false;
    *bytes = std::move(from_coordinator.front());
    from_coordinator.pop_front();
    return true;
  }
  bool close(std::chrono::milliseconds) override { return true; }

  std::deque<std::pair<int, std::string>> from_workers;
  std::deque<std::string> from_coordinator;
  std::vector<std::string> to_coordinator, to_workers;
};

RuntimeOptions side_options() {
  RuntimeOptions o;
  o.stall_check_seconds = 0;  // no heartbeats: a list goes out only when it says something
  o.fusion_wait_us = 0;
  return o;
}

// What either side is made with; the test fills the cache.
struct SideParts {
  SideParts(size_t capacity, Topology t) : cache(capacity), topo(std::move(t)) {}
  RuntimeOptions options = side_options();
  Logger logger{LogLevel::kError};
  SharedStats stats;
  ScriptedChannel channel;
  ResponseCache cache;
  Topology topo;
};

// Rank 0 of `size` ranks.
struct Rank0 : SideParts {
  Rank0(int size, size_t capacity)
      : SideParts(capacity, Topology{0, size}), side(channel, cache, options, topo, logger, stats) {}

  void put(const std::string& name, int64_t n = 8) { cache.put(req(name, n)); }
  int32_t slot(const std::string& name) const { return cache.slot_of(name); }
  void hand_changes() { ::hand_changes(cache, side); }
  void bits_from(int rank, std::vector<int32_t> slots, uint64_t epoch) {
    RequestList list;
    for (int32_t s : slots) list.cached.add(s);
    list.cache_epoch = epoch;
    channel.from_workers.emplace_back(rank, list.serialize());
  }
  void full_from(int rank, const Request& r) {
    RequestList list;
    list.requests.push_back(r);
    list.requests.back().rank = rank;
    list.cache_epoch = cache.epoch();
    channel.from_workers.emplace_back(rank, list.serialize());
  }
  // Rank 0's own request, by bit when its cache knows it.
  void submit(const Request& r) {
    RequestList mine;
    mine.requests.push_back(r);
    REQUIRE(side.submit(std::move(mine)).is_ok());
  }
  // One round's poll; the list it sent to the workers, if any.
  ResponseList poll() {
    ResponseList list;
    LoopSide::Polled polled;
    REQUIRE(side.poll(&list, &polled).is_ok());
    if (polled == LoopSide::Polled::kLastOfRound) {
      REQUIRE(!channel.to_workers.empty());
      ResponseList sent;
      REQUIRE(ResponseList::parse(channel.to_workers.back(), &sent).is_ok());
      REQUIRE(sent == list);
    } else {
      REQUIRE(list.responses.empty());
    }
    return list;
  }

  CoordinatorSide side;
};

// Every tensor the lists answer, by name ("a") or by slot ("#3").
std::vector<std::string> answered_names(const std::vector<ResponseList>& lists) {
  std::vector<std::string> out;
  for (const ResponseList& l : lists) {
    for (const Response& r : l.responses) {
      REQUIRE(r.type != ResponseType::kError);
      for (const std::string& n : r.names) out.push_back(n);
      for (int32_t s : r.slots) out.push_back("#" + std::to_string(s));
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST_CASE("Rank 0: bits counted against an evicted slot complete as the old tensor, in any order",
          "[cache][sides]") {
  // Rank 1's bit for "a" is counted; then a list evicts "a" for "e". The
  // other ranks' bits for "a" are then stale (resent in full) and rank 0's
  // request misses its cache. Whatever order those arrive in, "a" completes
  // by name with all three ranks, and "e" by its bits.
  enum Event { kRank0Full, kRank2StaleBit, kRank2Full, kBitsForE };
  std::vector<Event> order{kRank0Full, kRank2StaleBit, kRank2Full, kBitsForE};
  int orders = 0;
  do {
    // The rank 2's full request follows its stale bit (it learns of the resend first).
    if (std::find(order.begin(), order.end(), kRank2Full) < std::find(order.begin(), order.end(), kRank2StaleBit)) {
      continue;
    }
    ++orders;
    Rank0 r0(3, 2);
    r0.put("a");
    r0.put("b");
    const int32_t slot_a = r0.slot("a");
    const uint64_t epoch = r0.cache.epoch();
    r0.bits_from(1, {slot_a}, epoch);
    REQUIRE(r0.poll().responses.empty());
    REQUIRE(r0.side.waiting());
    r0.put("b");  // "a" is now the least recently used...
    r0.put("e");  // ...and evicted: its slot holds "e"
    REQUIRE(r0.slot("e") == slot_a);
    r0.hand_changes();
    std::vector<ResponseList> lists;
    for (Event ev : order) {
      switch (ev) {
        case kRank0Full:
          r0.submit(req("a"));  // a miss now: in full
          break;
        case kRank2StaleBit: {
          r0.bits_from(2, {slot_a}, epoch);
          const ResponseList l = r0.poll();
          REQUIRE(std::find(l.resend.begin(), l.resend.end(), Resend{2, slot_a, epoch}) != l.resend.end());
          lists.push_back(l);
          break;
        }
        case kRank2Full:
          r0.full_from(2, req("a"));
          break;
        case kBitsForE:
          r0.submit(req("e"));  // rank 0's bit for the new content
          r0.bits_from(1, {slot_a}, r0.cache.epoch());
          r0.bits_from(2, {slot_a}, r0.cache.epoch());
          break;
      }
      lists.push_back(r0.poll());
    }
    CAPTURE(orders);
    REQUIRE(answered_names(lists) == std::vector<std::string>{"#" + std::to_string(slot_a), "a"});
    REQUIRE_FALSE(r0.side.waiting());
  } while (std::next_permutation(order.begin(), order.end()));
  REQUIRE(orders == 12);
}

TEST_CASE("Rank 0: a slot changed twice in one list settles its marks as its first content", "[cache][sides]") {
  Rank0 r0(3, 1);
  r0.put("a");
  const uint64_t epoch = r0.cache.epoch();
  r0.bits_from(1, {0}, epoch);
  r0.submit(req("a"));  // rank 0's own bit
  REQUIRE(r0.poll().responses.empty());
  r0.put("b");  // one list: evicts "a"...
  r0.put("c");  // ...then "b"
  REQUIRE(r0.cache.changes().size() == 2);
  r0.hand_changes();  // both at once, as after the list's last tensor
  r0.full_from(2, req("a"));
  const ResponseList l = r0.poll();
  REQUIRE(answered_names({l}) == std::vector<std::string>{"a"});
  REQUIRE(l.responses[0].type == ResponseType::kAllreduce);
  REQUIRE_FALSE(r0.side.waiting());  // nothing was counted for "b" or "c"
}

TEST_CASE("Rank 0: a full request takes along the bits of its name; a join takes every partial slot",
          "[cache][sides]") {
  Rank0 r0(3, 4);
  r0.put("a");
  r0.put("b");
  r0.bits_from(1, {r0.slot("a"), r0.slot("b")}, r0.cache.epoch());
  REQUIRE(r0.poll().responses.empty());
  r0.full_from(2, req("a", 16, 2));  // rank 2 changed the shape of "a"
  r0.submit(req("a"));
  ResponseList l = r0.poll();
  REQUIRE(l.responses.size() == 1);
  REQUIRE(l.responses[0].type == ResponseType::kError);
  REQUIRE(l.responses[0].names == std::vector<std::string>{"a"});
  REQUIRE(r0.side.waiting());  // "b" still waits for ranks 0 and 2
  Request join = req("");
  join.type = CollectiveType::kJoin;
  r0.full_from(2, join);
  r0.submit(req("b"));
  l = r0.poll();
  REQUIRE(answered_names({l}) == std::vector<std::string>{"b"});  // by name: it left the fast path
  REQUIRE(l.responses[0].joined_specs.size() == 1);
}

TEST_CASE("Rank 0: a bit set twice by one rank is reported as a duplicate", "[cache][sides]") {
  Rank0 r0(2, 4);
  r0.put("a");
  r0.bits_from(1, {r0.slot("a")}, r0.cache.epoch());
  r0.bits_from(1, {r0.slot("a")}, r0.cache.epoch());
  const ResponseList l = r0.poll();
  REQUIRE(l.responses.size() == 1);
  REQUIRE(l.responses[0].type == ResponseType::kError);
  REQUIRE_THAT(l.responses[0].error_message, Catch::Contains("submitted twice"));
  REQUIRE_FALSE(r0.side.waiting());
}

TEST_CASE("Rank 0: a request list it cannot read shuts every rank down with one message", "[sides][errors]") {
  Rank0 r0(3, 4);
  r0.channel.from_workers.emplace_back(2, std::string("not a request list"));
  r0.full_from(1, req("a", 8, 1));
  const ResponseList l = r0.poll();
  REQUIRE(l.shutdown);
  REQUIRE_THAT(l.shutdown_reason, Catch::Contains("rank 0 could not read the request list rank 2 sent") &&
                                      Catch::Contains("malformed request list (bad header)"));
  // The readable list from rank 1 was still taken in; the next round says the same.
  REQUIRE(r0.side.waiting());
  REQUIRE(r0.poll().shutdown_reason == l.shutdown_reason);
}

namespace {

// A worker (rank 1 of 2) with tensors in flight in its queue.
struct Worker : SideParts {
  explicit Worker(size_t capacity)
      : SideParts(capacity, Topology{1, 2}), side(channel, cache, queue, options, topo, logger, stats) {}

  void enqueue(const std::string& name) {
    TensorEntry e = test::entry(name);
    e.request = req(name, 8, 1);
    REQUIRE(queue.add(std::move(e)).is_ok());
  }
  // Sends what is new in the queue (and resends); the list that went out.
  RequestList submit() {
    RequestList mine;
    mine.requests = queue.take_new_requests();
    side.take_resends(&mine.requests);
    REQUIRE(side.submit(std::move(mine)).is_ok());
    RequestList sent;
    REQUIRE(RequestList::parse(channel.to_coordinator.back(), &sent).is_ok());
    return sent;
  }
  // Rank 0 told this rank to resend its bit for `slot` set at `epoch`.
  void resend(int32_t slot, uint64_t epoch) {
    ResponseList l;
    l.resend.push_back({1, slot, epoch});
    side.list_ran(l);
  }
  void hand_changes() { ::hand_changes(cache, side); }

  TensorQueue queue;
  WorkerSide side;
};

}  // namespace

TEST_CASE("Worker: cached requests go as bits; a stale one comes back once, in full", "[cache][sides]") {
  Worker w(1);
  w.cache.put(req("a"));
  const uint64_t epoch = w.cache.epoch();
  w.enqueue("a");
  w.enqueue("x");  // not cached: in full
  RequestList sent = w.submit();
  REQUIRE(sent.cached.contains(0));
  REQUIRE(sent.cache_epoch == epoch);
  REQUIRE(sent.requests.size() == 1);
  REQUIRE(sent.requests[0].name == "x");
  REQUIRE(w.stats.get().cache_hits == 1);

  w.cache.put(req("x"));  // a list evicts "a" before rank 0 counted its bit
  w.hand_changes();
  w.resend(0, epoch + 1);  // another bit: nothing
  REQUIRE(w.submit().requests.empty());
  w.resend(0, epoch);
  sent = w.submit();
  REQUIRE(sent.cached.empty());
  REQUIRE(sent.requests.size() == 1);
  REQUIRE(sent.requests[0].name == "a");
  REQUIRE(w.stats.get().cache_resends == 1);
  w.resend(0, epoch);  // taken already
  REQUIRE(w.submit().requests.empty());
}

TEST_CASE("Worker: an answer settles a bit, before or after its slot changes", "[cache][sides]") {
  // The two orders the loop can make: answered by slot while the slot still
  // holds the tensor, or by name after a change the loop handed over first.
  for (const bool answer_first : {true, false}) {
    CAPTURE(answer_first);
    Worker w(1);
    w.cache.put(req("a"));
    const uint64_t epoch = w.cache.epoch();
    w.enqueue("a");
    REQUIRE(w.submit().cached.contains(0));
    Response response;
    response.names = {"a"};
    if (answer_first) {
      response.slots = {0};
      w.side.answered(response, 0);
      w.cache.put(req("b"));
      w.hand_changes();
    } else {
      w.cache.put(req("b"));
      w.hand_changes();
      w.side.answered(response, 0);  // by name: its bits left the fast path on rank 0
    }
    w.resend(0, epoch);  // nothing is out any more
    REQUIRE(w.submit().requests.empty());
  }
}

TEST_CASE("Worker: polls hand over each list rank 0 sent, one at a time", "[sides]") {
  Worker w(4);
  ResponseList a, b;
  a.cache_epoch = 0;
  b.shutdown = true;
  b.shutdown_reason = "test";
  w.channel.from_coordinator.push_back(a.serialize());
  w.channel.from_coordinator.push_back(b.serialize());
  ResponseList got;
  LoopSide::Polled polled;
  REQUIRE(w.side.poll(&got, &polled).is_ok());
  REQUIRE(polled == LoopSide::Polled::kList);
  REQUIRE(got == a);
  REQUIRE(w.side.poll(&got, &polled).is_ok());
  REQUIRE(got == b);
  REQUIRE(w.side.poll(&got, &polled).is_ok());
  REQUIRE(polled == LoopSide::Polled::kNothing);
}

TEST_CASE("Worker: a response list it cannot read becomes a shutdown of every rank, with its words",
          "[sides][errors]") {
  // The list may hold collectives the others run now: rank 1 cannot skip
  // it, so it asks rank 0 to end the job with why and ends here itself.
  Worker w(4);
  w.enqueue("x");
  w.channel.from_coordinator.push_back("not a response list");
  ResponseList got;
  LoopSide::Polled polled;
  REQUIRE(w.side.poll(&got, &polled).is_ok());
  REQUIRE(polled == LoopSide::Polled::kList);
  const std::string why =
      "could not read the response list rank 0 sent (malformed response list (bad header); "
      "are all ranks running the same Chorus build?)";
  REQUIRE(got.shutdown);
  REQUIRE(got.shutdown_reason == "rank 1: " + why);
  REQUIRE(got.responses.empty());
  REQUIRE(got.cache_epoch == w.cache.epoch());  // the loop runs it as it is
  REQUIRE(w.channel.to_coordinator.size() == 1);
  RequestList report;
  REQUIRE(RequestList::parse(w.channel.to_coordinator.back(), &report).is_ok());
  REQUIRE(report.shutdown);
  REQUIRE(report.shutdown_reason == why);
  REQUIRE(report.requests.empty());

  // Rank 0 tells every rank the same words rank 1 ended with.
  Rank0 r0(3, 4);
  r0.channel.from_workers.emplace_back(1, w.channel.to_coordinator.back());
  const ResponseList l = r0.poll();
  REQUIRE(l.shutdown);
  REQUIRE(l.shutdown_reason == got.shutdown_reason);
}
