#pragma once
// An elastic job's rendezvous, held by the launcher (launcher/src/
// elastic_driver.cc): members connect (rendezvous/elastic_member.h), prove
// the job's secret, ask for worlds; it tells them their world when
// WorldFormation says so (rendezvous/elastic_world_formation.h), and that the
// hosts changed. Single-threaded: the launcher's loop drives it (run_for)
// between its own work (processes, discovery).

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "chorus/status.h"
#include "net/tcp_acceptor.h"
#include "rendezvous/elastic_wire.h"
#include "rendezvous/elastic_world_formation.h"
#include "rendezvous/tcp_rendezvous.h"

namespace chorus::detail {

struct ElasticRendezvousSettings {
  FormationSettings formation;
  std::string address;  // where members reach it (advertised); a loopback member is recorded at it
  std::string job_id;
  TcpAuth auth;
};

class ElasticRendezvous {
 public:
  /// Listens on a free port of every interface.
  static Status start(ElasticRendezvousSettings settings, std::unique_ptr<ElasticRendezvous>* out);

  int port() const { return port_; }
  const std::string& address() const { return settings_.address; }
  /// The launcher started member `id` / it ended (exited or was stopped).
  void expect(const std::string& id) { formation_.expect(id); }
  /// Member `id` asked for a world at least once (it reached this rendezvous).
  bool has_asked(const std::string& id) const { return formation_.has_asked(id); }
  void gone(const std::string& id);
  /// The hosts changed (discovery): the current world's members are told.
  void hosts_changed(int kinds);
  /// Member `id` is to leave gracefully (its host left discovery). True
  /// when it is in the running world: it stays there until it asks for a
  /// new one (after the commit() where every rank agreed the hosts changed:
  /// tell them with hosts_changed(kHostsRemoved)), then run_for() names it
  /// in Events::left, unanswered, and no world counts it. False when it is
  /// in no world: nothing to finish, the launcher stops it at once.
  bool retire(const std::string& id);

  struct Events {
    std::vector<std::string> late;  ///< members to stop: they did not ask again in time
    std::vector<std::string> left;  ///< retired members that finished their step and asked again: to stop
    std::string failure;            ///< no world can form (members were told why)
    int64_t worlds_formed = 0;      ///< so far
  };
  /// Accepts, reads and answers for up to `seconds`, then decides.
  Events run_for(double seconds);

 private:
  struct Connection {
    Socket socket;
    std::string member_id;  // "" until it asked for a world
    std::string address;
    ElasticJoin join;
  };

  explicit ElasticRendezvous(ElasticRendezvousSettings settings);
  void accept_new();
  void read_from(Connection& c, double now);
  void tell_active(const std::string& text);
  void form(const std::vector<std::string>& ids);
  double now() const;

  ElasticRendezvousSettings settings_;
  WorldFormation formation_;
  Socket listener_;
  int port_ = 0;
  std::unique_ptr<HandshakeAcceptor> acceptor_;
  std::vector<std::unique_ptr<Connection>> connections_;
  std::vector<std::string> active_;   // the current world's members
  std::vector<std::string> retired_;  // to leave at their next ask (retire())
  std::vector<std::string> left_;     // retired ones that asked, for the next Events
  int64_t generation_ = 0;
  int kinds_ = 0;
  std::string failure_;
};

}  // namespace chorus::detail
