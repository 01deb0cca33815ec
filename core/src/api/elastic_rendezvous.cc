// chorus/elastic_rendezvous.h over the TCP transport's rendezvous
// (rendezvous/elastic_rendezvous.h), the one chorusrun holds.
#include "chorus/elastic_rendezvous.h"

#include <utility>

#include "chorus/error.h"
#include "rendezvous/elastic_rendezvous.h"

namespace chorus::elastic {

static_assert(kHostsAdded == detail::kHostsAdded && kHostsRemoved == detail::kHostsRemoved);

struct Rendezvous::Impl {
  std::unique_ptr<detail::ElasticRendezvous> held;
};

Rendezvous::Rendezvous(RendezvousSettings settings) : impl_(std::make_unique<Impl>()) {
  if (settings.min_np < 1 || settings.max_np < settings.min_np) {
    throw InvalidArgumentError(Status::invalid_argument(
        "elastic rendezvous: " + settings.min_np_name + " must be >= 1 and at most the maximum (" +
        std::to_string(settings.min_np) + ", " + std::to_string(settings.max_np) + ")"));
  }
  if (!(settings.elastic_timeout_seconds > 0) || !(settings.join_grace_seconds > 0)) {
    throw InvalidArgumentError(Status::invalid_argument("elastic rendezvous: " + settings.timeout_name +
                                                        " and the join grace must be > 0 seconds"));
  }
  detail::ElasticRendezvousSettings s;
  s.formation.min_np = settings.min_np;
  s.formation.max_np = settings.max_np;
  s.formation.elastic_timeout_seconds = settings.elastic_timeout_seconds;
  s.formation.join_grace_seconds = settings.join_grace_seconds;
  s.formation.min_np_name = std::move(settings.min_np_name);
  s.formation.timeout_name = std::move(settings.timeout_name);
  s.address = std::move(settings.address);
  s.job_id = std::move(settings.job_id);
  s.auth.secret = std::move(settings.secret);
  throw_if_error(detail::ElasticRendezvous::start(std::move(s), &impl_->held));
}

Rendezvous::~Rendezvous() = default;

int Rendezvous::port() const { return impl_->held->port(); }
void Rendezvous::expect(const std::string& id) { impl_->held->expect(id); }
void Rendezvous::gone(const std::string& id) { impl_->held->gone(id); }
void Rendezvous::hosts_changed(int kinds) {
  if (kinds < 1 || kinds > (kHostsAdded | kHostsRemoved)) {  // the members would refuse the notice
    throw InvalidArgumentError(Status::invalid_argument(
        "elastic rendezvous: hosts_changed takes kHostsAdded, kHostsRemoved or both, not " + std::to_string(kinds)));
  }
  impl_->held->hosts_changed(kinds);
}

bool Rendezvous::retire(const std::string& id) { return impl_->held->retire(id); }

RendezvousEvents Rendezvous::run_for(double seconds) {
  if (!(seconds >= 0 && seconds <= 3600)) {  // NaN too: poll's timeout is an int of milliseconds
    throw InvalidArgumentError(Status::invalid_argument("elastic rendezvous: run_for takes 0 to 3600 seconds, not " +
                                                        std::to_string(seconds)));
  }
  detail::ElasticRendezvous::Events e = impl_->held->run_for(seconds);
  return {std::move(e.late), std::move(e.left), std::move(e.failure), e.worlds_formed};
}

}  // namespace chorus::elastic
