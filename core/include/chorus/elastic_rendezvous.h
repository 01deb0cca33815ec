#pragma once
/// \file elastic_rendezvous.h
/// An elastic job's rendezvous for a driver of one's own: what chorusrun
/// holds for `--min-np` jobs, for drivers that start workers their own way
/// (a cluster engine's: chorus.ray.ElasticRayExecutor). The driver starts
/// each worker with CHORUS_ELASTIC_ADDR=`address:port()`,
/// CHORUS_ELASTIC_MEMBER=<its id>, CHORUS_JOB_ID=<job_id> and the job's
/// secret, says expect(id) when it starts one and gone(id) when one ends,
/// and calls run_for() in its loop: the rendezvous forms each world from
/// the members that ask (at least min_np), renumbers ranks (the old world's
/// in order, newcomers after), and tells the running members when the
/// hosts changed. Single-threaded: one thread drives it. Guide:
/// docs/elastic.md.

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "chorus/export.h"

namespace chorus::elastic {

struct RendezvousSettings {
  std::string address = "127.0.0.1";  ///< where the workers reach it (it listens on every interface)
  std::string job_id;                 ///< the workers' CHORUS_JOB_ID
  std::string secret;                 ///< the job's (CHORUS_SECRET); "" none
  int min_np = 1;                     ///< fewer members than this for elastic_timeout_seconds: failure
  int max_np = std::numeric_limits<int>::max();
  double elastic_timeout_seconds = 600;
  double join_grace_seconds = 10;        ///< a member still in its old world this long after another left it is late
  std::string min_np_name = "--min-np";  ///< how failures name min_np
  std::string timeout_name = "--elastic-timeout";  ///< and elastic_timeout_seconds
};

/// What happened during one run_for().
struct RendezvousEvents {
  std::vector<std::string> late;  ///< members to stop: they did not ask again in time
  std::vector<std::string> left;  ///< retired members that finished their step and asked again: end them
  std::string failure;            ///< no world can form (the members were told why); "" none
  int64_t worlds_formed = 0;      ///< so far
};

/// Bits of hosts_changed()'s `kinds` (Horovod's HostUpdateResult).
constexpr int kHostsAdded = 1;
constexpr int kHostsRemoved = 2;

class CHORUS_API Rendezvous {
 public:
  /// Listens on a free port of every interface; throws chorus::Error when it cannot.
  explicit Rendezvous(RendezvousSettings settings);
  ~Rendezvous();
  Rendezvous(const Rendezvous&) = delete;
  Rendezvous& operator=(const Rendezvous&) = delete;

  int port() const;
  /// The driver started member `id` / it ended (exited, killed, lost).
  void expect(const std::string& id);
  void gone(const std::string& id);
  /// Hosts were added or removed (kHostsAdded | kHostsRemoved): the current
  /// world's members are told; they agree at their next commit(). Other
  /// values of `kinds`: InvalidArgumentError.
  void hosts_changed(int kinds);
  /// Member `id` is to leave gracefully (its host was removed, not failed).
  /// True when it is in the running world: it finishes its step there, and
  /// once it asks for the next world (after the commit() where every rank
  /// agreed: call hosts_changed(kHostsRemoved) after retiring) run_for()
  /// names it in `left`, unanswered: end its process then; no world counts
  /// it, nothing is rolled back. False when it is in no world: end it now.
  bool retire(const std::string& id);
  /// Accepts, reads and answers for up to `seconds` (0 to 3600, else
  /// InvalidArgumentError), then decides; a failure is in the events.
  RendezvousEvents run_for(double seconds);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace chorus::elastic
