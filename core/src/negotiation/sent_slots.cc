#include "negotiation/sent_slots.h"

namespace chorus::detail {

bool SentSlots::try_send(int32_t slot, uint64_t epoch, const std::string& name) {
  if (slot < 0 || static_cast<size_t>(slot) >= by_slot_.size()) return false;
  Sent& s = by_slot_[static_cast<size_t>(slot)];
  if (s.live) return false;
  s.live = true;
  s.epoch = epoch;
  s.name.assign(name);
  ++live_;
  return true;
}

void SentSlots::completed(const std::string& name, int32_t slot) {
  if (slot >= 0 && static_cast<size_t>(slot) < by_slot_.size()) {
    Sent& s = by_slot_[static_cast<size_t>(slot)];
    if (s.live && s.name == name) {
      s.live = false;
      --live_;
      return;
    }
  }
  if (!displaced_.empty()) displaced_.erase(name);
}

void SentSlots::slot_changing(int32_t slot) {
  if (slot < 0 || static_cast<size_t>(slot) >= by_slot_.size()) return;
  Sent& s = by_slot_[static_cast<size_t>(slot)];
  if (!s.live) return;
  displaced_[s.name] = Displaced{slot, s.epoch};
  s.live = false;
  --live_;
}

std::optional<std::string> SentSlots::take_resend(int32_t slot, uint64_t epoch) {
  if (slot >= 0 && static_cast<size_t>(slot) < by_slot_.size()) {
    Sent& s = by_slot_[static_cast<size_t>(slot)];
    if (s.live && s.epoch == epoch) {
      s.live = false;
      --live_;
      return s.name;
    }
  }
  for (auto it = displaced_.begin(); it != displaced_.end(); ++it) {
    if (it->second.slot != slot || it->second.epoch != epoch) continue;
    std::string name = it->first;
    displaced_.erase(it);
    return name;
  }
  return std::nullopt;
}

}  // namespace chorus::detail
