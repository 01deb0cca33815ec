// The C ABI's elastic rendezvous (chorus_rendezvous_*) over
// chorus/elastic_rendezvous.h: the handle owns the Rendezvous and the
// late and left members of the last run_for, whose strings the caller reads.
#include <limits>
#include <string>
#include <vector>

#include "c_guard.h"
#include "chorus/c_api.h"
#include "chorus/elastic_rendezvous.h"
#include "chorus/error.h"

struct chorus_rendezvous {
  explicit chorus_rendezvous(chorus::elastic::RendezvousSettings s) : held(std::move(s)) {}
  chorus::elastic::Rendezvous held;
  std::vector<std::string> late;
  std::vector<std::string> left;
};

using chorus::detail::guarded;

namespace {

void require(bool ok, const std::string& what) {
  if (!ok) throw chorus::InvalidArgumentError(chorus::Status::invalid_argument(what));
}

void require_handle(const chorus_rendezvous* r, const char* function) {
  require(r != nullptr, std::string(function) + ": the rendezvous is NULL");
}

void require_member(const char* member, const char* function) {
  require(member != nullptr && member[0] != '\0', std::string(function) + ": the member id is NULL or empty");
}

}  // namespace

int chorus_rendezvous_start(const char* address, const char* job_id, const char* secret, int min_np, int max_np,
                            double elastic_timeout_seconds, double join_grace_seconds, const char* min_np_name,
                            const char* timeout_name, chorus_rendezvous** out) {
  return guarded([&]() -> int {
    require(out != nullptr, "chorus_rendezvous_start: out is NULL");
    require(address != nullptr && address[0] != '\0', "chorus_rendezvous_start: address is NULL or empty");
    require(max_np >= 0, "chorus_rendezvous_start: max_np must be >= 0 (0: no maximum), not " + std::to_string(max_np));
    chorus::elastic::RendezvousSettings s;
    s.address = address;
    s.job_id = job_id ? job_id : "";
    s.secret = secret ? secret : "";
    s.min_np = min_np;
    s.max_np = max_np == 0 ? std::numeric_limits<int>::max() : max_np;
    s.elastic_timeout_seconds = elastic_timeout_seconds;
    s.join_grace_seconds = join_grace_seconds;
    if (min_np_name) s.min_np_name = min_np_name;
    if (timeout_name) s.timeout_name = timeout_name;
    *out = new chorus_rendezvous(std::move(s));
    return CHORUS_OK;
  });
}

int chorus_rendezvous_port(const chorus_rendezvous* r) {
  return guarded([&]() -> int {
    require_handle(r, "chorus_rendezvous_port");
    return r->held.port();
  });
}

int chorus_rendezvous_expect(chorus_rendezvous* r, const char* member) {
  return guarded([&]() -> int {
    require_handle(r, "chorus_rendezvous_expect");
    require_member(member, "chorus_rendezvous_expect");
    r->held.expect(member);
    return CHORUS_OK;
  });
}

int chorus_rendezvous_gone(chorus_rendezvous* r, const char* member) {
  return guarded([&]() -> int {
    require_handle(r, "chorus_rendezvous_gone");
    require_member(member, "chorus_rendezvous_gone");
    r->held.gone(member);
    return CHORUS_OK;
  });
}

int chorus_rendezvous_hosts_changed(chorus_rendezvous* r, int kinds) {
  return guarded([&]() -> int {
    require_handle(r, "chorus_rendezvous_hosts_changed");
    require(kinds >= 1 && kinds <= 3,
            "chorus_rendezvous_hosts_changed: kinds must be 1 (added), 2 (removed) or 3, not " + std::to_string(kinds));
    r->held.hosts_changed(kinds);
    return CHORUS_OK;
  });
}

int chorus_rendezvous_run_for(chorus_rendezvous* r, double seconds, int64_t* worlds_formed, int* late_count) {
  return guarded([&]() -> int {
    require_handle(r, "chorus_rendezvous_run_for");
    require(worlds_formed != nullptr && late_count != nullptr,
            "chorus_rendezvous_run_for: worlds_formed and late_count must not be NULL");
    chorus::elastic::RendezvousEvents e = r->held.run_for(seconds);
    r->late = std::move(e.late);
    r->left = std::move(e.left);
    *worlds_formed = e.worlds_formed;
    *late_count = static_cast<int>(r->late.size());
    if (!e.failure.empty()) return chorus::detail::fail(CHORUS_ERR_ABORTED, e.failure);
    return CHORUS_OK;
  });
}

const char* chorus_rendezvous_late(const chorus_rendezvous* r, int index) {
  if (r == nullptr || index < 0 || index >= static_cast<int>(r->late.size())) return nullptr;
  return r->late[static_cast<size_t>(index)].c_str();
}

int chorus_rendezvous_retire(chorus_rendezvous* r, const char* member) {
  return guarded([&]() -> int {
    require_handle(r, "chorus_rendezvous_retire");
    require_member(member, "chorus_rendezvous_retire");
    return r->held.retire(member) ? 1 : 0;
  });
}

int chorus_rendezvous_left_count(const chorus_rendezvous* r) {
  return r == nullptr ? 0 : static_cast<int>(r->left.size());
}

const char* chorus_rendezvous_left(const chorus_rendezvous* r, int index) {
  if (r == nullptr || index < 0 || index >= static_cast<int>(r->left.size())) return nullptr;
  return r->left[static_cast<size_t>(index)].c_str();
}

void chorus_rendezvous_stop(chorus_rendezvous* r) { delete r; }
