#pragma once
// A call this rank refuses is still negotiated. The checks of a rank's own
// input (its tensor's shape, dtype, device, its arguments) can fail on one
// rank and pass on the others; thrown there alone, the others would wait for
// that rank forever. So a refusal is enqueued under the same name
// (Request::refused) and the coordinator fails the tensor on every rank,
// naming the refusing ranks and why; the caller's handle fails with that.
// What cannot be negotiated still throws at once: an empty name, a process
// set this rank is not in, a closed runtime, a name already in flight here.

#include <string>
#include <vector>

#include "chorus/error.h"
#include "api/collective_entries.h"
#include "engine/engine.h"

namespace chorus::detail {

/// Enqueues the entry `make()` builds (without hooks: they are `hooks`), or
/// this rank's refusal of `name` when `make` throws InvalidArgumentError.
template <class Make>
Handle enqueue_or_refuse(Engine& target, CollectiveType type, const std::string& name, OpHooks hooks, Make&& make) {
  check_name(name, collective_name(type));  // no name, nothing to negotiate under
  TensorEntry entry;
  try {
    entry = make();
  } catch (const InvalidArgumentError& refused) {
    return target.enqueue(refused_entry(type, name, target.topology().rank, std::move(hooks), refused.status().message()));
  }
  entry.hooks = std::move(hooks);
  return target.enqueue(std::move(entry));
}

/// The same for a group: `make()` builds every member (with its hooks); a
/// refusal of any member refuses them all, as one group under `names`.
template <class Make>
std::vector<Handle> enqueue_group_or_refuse(Engine& target, CollectiveType type, const std::vector<std::string>& names,
                                            const std::vector<OpHooks>& hooks, const char* kind, Make&& make) {
  if (names.empty()) invalid(std::string("grouped ") + kind + ": no tensors given");
  for (const std::string& name : names) check_name(name, kind);
  std::vector<TensorEntry> entries;
  try {
    entries = make();
  } catch (const InvalidArgumentError& refused) {
    return target.enqueue(
        refused_group(type, names, target.topology().rank, hooks, kind, refused.status().message()));
  }
  return target.enqueue(std::move(entries));
}

}  // namespace chorus::detail
