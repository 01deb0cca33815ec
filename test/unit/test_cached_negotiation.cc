// The pieces of negotiation by cache bits, alone: the bit vector and its
// wire form, the coordinator's count of ranks per slot, and a worker's
// record of the bits it sent.
#include <catch2/catch.hpp>

#include "negotiation/cached_readiness.h"
#include "negotiation/messages.h"
#include "negotiation/sent_slots.h"
#include "negotiation/slot_bits.h"

using namespace chorus;
using namespace chorus::detail;

namespace {
std::vector<int32_t> slots_of(const SlotBits& bits) {
  std::vector<int32_t> out;
  bits.for_each([&](int32_t s) { out.push_back(s); });
  return out;
}
}  // namespace

TEST_CASE("Slot bits keep a set of slots, ascending, and travel as their non-zero words", "[cache][bits]") {
  SlotBits bits;
  REQUIRE(bits.empty());
  for (int32_t s : {700, 3, 64, 63, 0, 3, 1023}) bits.add(s);
  REQUIRE(slots_of(bits) == std::vector<int32_t>{0, 3, 63, 64, 700, 1023});
  REQUIRE(bits.count() == 6);
  REQUIRE(bits.contains(700));
  REQUIRE_FALSE(bits.contains(701));
  REQUIRE_FALSE(bits.contains(-1));
  REQUIRE_FALSE(bits.contains(5000));

  WireWriter w;
  bits.write(w);
  const std::string wire = w.take();
  REQUIRE(wire.size() == 4 + 4 * (4 + 8));  // words 0, 1, 10 and 15 of 16
  WireReader r(wire);
  SlotBits back;
  back.add(5);  // reading replaces what was there
  REQUIRE(back.read(r, 1024));  // 16 words of slots
  REQUIRE(r.at_end());
  REQUIRE(back == bits);

  bits.clear();
  REQUIRE(bits.empty());
  REQUIRE(slots_of(bits).empty());
  bits.add(2);
  REQUIRE(slots_of(bits) == std::vector<int32_t>{2});
}

TEST_CASE("Malformed slot bits are refused", "[cache][bits]") {
  auto read = [](auto&& write, size_t max_slots) {
    WireWriter w;
    write(w);
    const std::string bytes = w.take();
    WireReader r(bytes);
    SlotBits bits;
    return bits.read(r, max_slots);
  };
  REQUIRE_FALSE(read([](WireWriter& w) { w.put<uint32_t>(2); w.put<uint32_t>(0); w.put<uint64_t>(1); }, 1024));  // truncated
  REQUIRE_FALSE(read([](WireWriter& w) { w.put<uint32_t>(1); w.put<uint32_t>(0); w.put<uint64_t>(0); }, 1024));  // zero word
  REQUIRE_FALSE(read([](WireWriter& w) { w.put<uint32_t>(1); w.put<uint32_t>(20); w.put<uint64_t>(1); }, 1024));  // too far
  REQUIRE_FALSE(read([](WireWriter& w) {  // not ascending
    w.put<uint32_t>(2);
    w.put<uint32_t>(3);
    w.put<uint64_t>(1);
    w.put<uint32_t>(1);
    w.put<uint64_t>(1);
  }, 1024));
  REQUIRE(read([](WireWriter& w) { w.put<uint32_t>(0); }, 1024));
  // A bit at or past the capacity, inside the last word: refused.
  REQUIRE_FALSE(read([](WireWriter& w) { w.put<uint32_t>(1); w.put<uint32_t>(1); w.put<uint64_t>(uint64_t{1} << 36); }, 100));
  REQUIRE(read([](WireWriter& w) { w.put<uint32_t>(1); w.put<uint32_t>(1); w.put<uint64_t>(uint64_t{1} << 35); }, 100));
}

TEST_CASE("Request and response lists carry cache bits, slots and resends", "[cache][messages]") {
  RequestList list;
  list.cached.add(7);
  list.cached.add(130);
  list.cache_epoch = 42;
  Request full;
  full.name = "full";
  full.shape = {3};
  list.requests.push_back(full);
  RequestList back;
  REQUIRE(RequestList::parse(list.serialize(), &back).is_ok());
  REQUIRE(back == list);
  REQUIRE(back.cache_epoch == 42);

  ResponseList out;
  Response cached;
  cached.slots = {7, 130};
  cached.total_bytes = 64;
  out.responses.push_back(cached);
  out.resend.push_back({1, 130, 41});
  out.cache_epoch = 43;
  ResponseList out_back;
  REQUIRE(ResponseList::parse(out.serialize(), &out_back).is_ok());
  REQUIRE(out_back == out);
  REQUIRE(out_back.responses.front().names.empty());

  std::string bytes = list.serialize();
  bytes.pop_back();
  REQUIRE_FALSE(RequestList::parse(bytes, &back).is_ok());
  // Bits beyond the receiver's cache are refused before anything is allocated for them.
  REQUIRE(RequestList::parse(list.serialize(), &back, 192).is_ok());
  REQUIRE_FALSE(RequestList::parse(list.serialize(), &back, 128).is_ok());
}

TEST_CASE("Cached readiness: a slot is ready when the last rank sets it", "[cache][readiness]") {
  CachedReadiness ready(3, 8);
  REQUIRE(ready.idle());
  REQUIRE(ready.mark(5, 2) == CachedReadiness::Mark::kWaiting);
  REQUIRE(ready.partial(5));
  REQUIRE_FALSE(ready.idle());
  REQUIRE(ready.mark(5, 2) == CachedReadiness::Mark::kDuplicate);
  REQUIRE(ready.mark(5, 0) == CachedReadiness::Mark::kWaiting);
  REQUIRE(ready.mark(1, 1) == CachedReadiness::Mark::kWaiting);
  REQUIRE(ready.partial_slots() == std::vector<int32_t>{1, 5});
  REQUIRE(ready.mark(5, 1) == CachedReadiness::Mark::kReady);
  REQUIRE_FALSE(ready.partial(5));
  REQUIRE(ready.partial_slots() == std::vector<int32_t>{1});
  // The slot starts afresh: the next step's bits count again.
  REQUIRE(ready.mark(5, 1) == CachedReadiness::Mark::kWaiting);
  REQUIRE(ready.mark(5, 0) == CachedReadiness::Mark::kWaiting);
  REQUIRE(ready.mark(5, 2) == CachedReadiness::Mark::kReady);
}

TEST_CASE("Cached readiness: a dropped slot gives back its ranks; stalls name the marked ranks", "[cache][readiness]") {
  using Clock = CachedReadiness::Clock;
  const auto t0 = Clock::now();
  CachedReadiness ready(70, 4);  // more ranks than one word of bits
  REQUIRE(ready.mark(2, 69, t0) == CachedReadiness::Mark::kWaiting);
  REQUIRE(ready.mark(2, 0, t0 + std::chrono::seconds(1)) == CachedReadiness::Mark::kWaiting);
  REQUIRE(ready.mark(3, 64, t0 + std::chrono::seconds(5)) == CachedReadiness::Mark::kWaiting);
  const auto stalled = ready.stalled(t0 + std::chrono::seconds(10), 8.0);
  REQUIRE(stalled.size() == 1);
  REQUIRE(stalled.front().slot == 2);
  REQUIRE(stalled.front().marked_ranks == std::vector<int>{0, 69});
  REQUIRE(stalled.front().waiting_seconds == Approx(10.0));
  const CachedReadiness::Dropped d = ready.drop(2);
  REQUIRE(d.ranks == std::vector<int>{0, 69});
  REQUIRE(d.first_seen == t0);
  REQUIRE_FALSE(ready.partial(2));
  REQUIRE(ready.drop(2).ranks.empty());  // nothing left to drop
  REQUIRE(ready.mark(2, 69) == CachedReadiness::Mark::kWaiting);  // marks from a clean state
  ready.drop(2);
  ready.drop(3);
  REQUIRE(ready.idle());
  CachedReadiness alone(1, 2);
  REQUIRE(alone.mark(0, 0) == CachedReadiness::Mark::kReady);
  REQUIRE(alone.idle());
}

TEST_CASE("Sent slots: one bit per slot, found again for a resend, displaced by a slot change", "[cache][sent]") {
  SentSlots sent(4);
  REQUIRE(sent.empty());
  REQUIRE(sent.try_send(1, 10, "a"));
  REQUIRE_FALSE(sent.try_send(1, 11, "b"));  // a defence: slot 1 carries a's bit
  REQUIRE_FALSE(sent.try_send(9, 10, "c"));  // no such slot
  REQUIRE(sent.try_send(2, 10, "c"));
  REQUIRE_FALSE(sent.empty());
  REQUIRE_FALSE(sent.take_resend(1, 11));  // another epoch: not a's bit
  REQUIRE(sent.take_resend(1, 10) == std::optional<std::string>("a"));
  REQUIRE_FALSE(sent.take_resend(1, 10));  // once only
  sent.completed("c", 2);
  REQUIRE(sent.empty());

  REQUIRE(sent.try_send(3, 20, "d"));
  sent.slot_changing(3);  // d's slot is refilled while d is still out
  REQUIRE(sent.try_send(3, 21, "e"));  // the slot is free for its new tensor
  REQUIRE(sent.take_resend(3, 20) == std::optional<std::string>("d"));
  REQUIRE(sent.take_resend(3, 21) == std::optional<std::string>("e"));
  REQUIRE(sent.empty());

  REQUIRE(sent.try_send(0, 30, "f"));
  sent.slot_changing(0);
  sent.completed("f", -1);  // completed in full, by name
  REQUIRE(sent.empty());
  REQUIRE(sent.try_send(0, 31, "g"));
  sent.completed("not g", 0);  // another tensor's completion leaves g's bit
  REQUIRE_FALSE(sent.empty());
  sent.completed("g", 0);
  REQUIRE(sent.empty());
}
