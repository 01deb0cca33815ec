#pragma once
// Where a TCP job's secret comes from (docs/security.md): CHORUS_SECRET
// (chorusrun sets it), else the file CHORUS_SECRET_FILE names, readable by
// its owner only; and what happens without one: rank 0 warns once when the
// job meets over an address other than loopback, and CHORUS_REQUIRE_SECRET=1
// makes it an error. Also CHORUS_HANDSHAKE_TIMEOUT_SECONDS.

#include <string>

#include "chorus/status.h"
#include "net/tcp_handshake.h"
#include "rendezvous/tcp_job_env.h"

namespace chorus::detail {

/// The secret in `path`: its content with one trailing newline dropped. A
/// file its group or others may read, an empty one, or one that is not a
/// regular file is an error naming the file (and its mode).
Status read_secret_file(const std::string& path, std::string* secret);

/// Whether every address `host` resolves to is loopback (127.0.0.0/8, ::1).
bool is_loopback_host(const std::string& host);

/// The secret and handshake timeout of this rank of `spec`'s job, from the
/// environment. Without a secret in a job of several ranks: an error when
/// CHORUS_REQUIRE_SECRET is on, else on rank 0 over a non-loopback master
/// address `*warning` says that any process reaching the port can join.
Status tcp_auth_from_environment(const TcpJobSpec& spec, TcpAuth* auth, std::string* warning);

}  // namespace chorus::detail
