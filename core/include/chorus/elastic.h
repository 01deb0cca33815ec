#pragma once
/// \file elastic.h
/// Elastic training (Horovod's hvd.elastic): a job whose ranks may die or
/// join while it runs. The surviving processes stay alive: when a
/// collective fails because the world changed, they roll back to the last
/// commit() in memory, meet the processes that remain and any new ones in a
/// new world (ranks renumbered; rank 0 always a survivor), and the new rank
/// 0 sends its committed state to everyone (sync). Start such a job with
/// `chorusrun --tcp --min-np N --max-np M [--host-discovery-script S] ./train`.
///
///     struct Training : chorus::elastic::State { ... save / restore / sync ... };
///     chorus::init();
///     Training state(...);
///     chorus::elastic::run(state, [&] {
///       for (; state.epoch < epochs; ++state.epoch) {
///         for (; state.batch < batches; ++state.batch) { step(); state.commit(); }
///         state.batch = 0;
///       }
///     });
///
/// The LibTorch state over a model and an optimizer: chorus/torch/elastic.h.
/// Guide: docs/elastic.md.

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <vector>

#include "chorus/error.h"
#include "chorus/export.h"

namespace chorus::elastic {

/// Horovod's name for a collective that failed because a rank was lost:
/// what run() recovers from.
using HorovodInternalError = AbortedError;

/// Thrown by State::commit() / check_host_updates() on every rank at the
/// same step when hosts were added or removed; run() then forms the new
/// world. `skip_sync` is Horovod's field; Chorus always syncs after a reset.
class CHORUS_API HostsUpdatedInterrupt : public std::runtime_error {
 public:
  explicit HostsUpdatedInterrupt(bool skip_sync = false);
  bool skip_sync() const { return skip_sync_; }

 private:
  bool skip_sync_;
};

/// Whether this process is a member of an elastic job (chorusrun started it
/// in elastic mode: CHORUS_ELASTIC_ADDR is set; or it meets through etcd:
/// CHORUS_RDZV_BACKEND is set). Callable before init().
CHORUS_API bool enabled();

/// What the job's rendezvous said about the hosts since this world formed,
/// on this rank only (not agreed): the latest generation (0: nothing) and
/// its kinds (1: added, 2: removed; Horovod's HostUpdateResult).
struct HostUpdates {
  int64_t generation = 0;
  int kinds = 0;
};
CHORUS_API HostUpdates host_updates();

/// What survives a change of the world: the user's training state.
/// Subclasses say how to copy it aside (save), put it back (restore) and
/// send rank 0's to every rank (sync).
class CHORUS_API State {
 public:
  virtual ~State();
  /// Callbacks run after every reset (the new world formed, state synced
  /// not yet): e.g. to scale the learning rate by the new size().
  void register_reset_callbacks(std::vector<std::function<void()>> callbacks);
  void on_reset();
  /// save(), then check_host_updates(): a step that committed is never redone.
  void commit();
  /// Every rank agrees (an allreduce of what each heard) whether the hosts
  /// changed since the last agreement; if so every rank throws
  /// HostsUpdatedInterrupt here. A collective: every rank calls it at the
  /// same step.
  void check_host_updates();

  virtual void save() = 0;
  virtual void restore() = 0;
  virtual void sync() = 0;

 private:
  std::vector<std::function<void()>> reset_callbacks_;
  int64_t agreed_generation_ = 0;
};

/// Horovod's hvd.elastic.run: sync(), then fn(); when fn throws
/// HorovodInternalError (a rank was lost) the state is restored to the last
/// commit; on it or HostsUpdatedInterrupt the world is formed again
/// (shutdown(), init()), on_reset() runs and it starts over with sync().
/// Other errors (a mismatch: a bug) propagate at once. Under MPI, whose
/// world cannot change, it throws PreconditionError at once; in a job that
/// is not elastic fn runs once and a lost rank's error propagates.
CHORUS_API void run(State& state, const std::function<void()>& fn);

/// Leaves the current world and joins the next: shutdown(), then init()
/// with the options of the last init(). run() calls it; call it yourself
/// only when you write your own loop.
CHORUS_API void reset();

}  // namespace chorus::elastic
