// rendezvous/elastic_member.h: the member, and which rendezvous the
// environment asks for.
#include "rendezvous/elastic_member.h"

#include <cstdlib>
#include <mutex>
#include <utility>

#include "common/env_params.h"
#include "common/number_text.h"
#include "rendezvous/elastic_launcher_client.h"
#include "rendezvous/etcd_rendezvous.h"
#include "rendezvous/tcp_secret.h"

namespace chorus::detail {

ElasticMember::ElasticMember(std::string member_id, std::unique_ptr<RendezvousClient> client)
    : member_id_(std::move(member_id)), client_(std::move(client)) {}

ElasticMember::ElasticMember(std::string address, int port, std::string member_id, std::string job_id, TcpAuth auth)
    : member_id_(member_id),
      client_(std::make_unique<LauncherRendezvousClient>(std::move(address), port, std::move(member_id),
                                                         std::move(job_id), std::move(auth))) {}

bool elastic_requested() { return read_env("ELASTIC_ADDR").has_value() || read_env("RDZV_BACKEND").has_value(); }

namespace {

Status launcher_member_from_environment(const std::string& addr, std::unique_ptr<ElasticMember>* out) {
  const size_t colon = addr.rfind(':');
  int64_t port = 0;
  if (colon == std::string::npos || colon == 0 || !whole_number(addr.substr(colon + 1), 1, 65535, &port)) {
    return Status::invalid_argument("CHORUS_ELASTIC_ADDR='" + addr + "' is not host:port");
  }
  const std::optional<std::string> member = read_env("ELASTIC_MEMBER");
  if (!member || member->empty()) {
    return Status::invalid_argument(
        "CHORUS_ELASTIC_ADDR is set but CHORUS_ELASTIC_MEMBER (this process's id in "
        "the elastic job) is not; start elastic jobs with chorusrun, or without it through etcd "
        "(CHORUS_RDZV_BACKEND=etcd)");
  }
  TcpJobSpec spec;  // the secret's variables only: a member is never alone
  spec.size = 2;
  spec.rank = 1;
  TcpAuth auth;
  std::string warning;
  Status s = tcp_auth_from_environment(spec, &auth, &warning);
  if (!s.is_ok()) return s;
  *out = std::make_unique<ElasticMember>(addr.substr(0, colon), static_cast<int>(port), *member,
                                         read_env("JOB_ID").value_or(""), std::move(auth));
  return Status::ok();
}

Status member_from_environment(std::unique_ptr<ElasticMember>* out) {
  if (const std::optional<std::string> addr = read_env("ELASTIC_ADDR")) {
    return launcher_member_from_environment(*addr, out);
  }
  std::string member_id;
  std::unique_ptr<RendezvousClient> client;
  Status s = etcd_client_from_environment(&member_id, &client);
  if (s.is_ok()) *out = std::make_unique<ElasticMember>(std::move(member_id), std::move(client));
  return s;
}

ElasticMember* the_member = nullptr;  // leaked on purpose: lives as long as the process

void leave_at_exit() {
  if (the_member) the_member->leave();
}

}  // namespace

ElasticMember* elastic_member(Status* status) {
  static std::mutex mu;
  static Status made;
  std::lock_guard<std::mutex> lock(mu);
  if (!the_member && made.is_ok() && elastic_requested()) {
    std::unique_ptr<ElasticMember> m;
    made = member_from_environment(&m);
    the_member = m.release();
    if (the_member) std::atexit(leave_at_exit);
  }
  if (status) *status = made;
  return the_member;
}

}  // namespace chorus::detail
