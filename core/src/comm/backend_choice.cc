#include "comm/backend_choice.h"

#include "chorus/error.h"
#include "comm/tcp/tcp_backend.h"
#include "rendezvous/elastic_member.h"
#include "rendezvous/tcp_job_env.h"

namespace chorus::detail {

#if CHORUS_HAVE_MPI
std::unique_ptr<Backend> make_mpi_backend(const RuntimeOptions& options);  // comm/mpi/mpi_backend.cc
#endif

bool built_with_mpi() {
#if CHORUS_HAVE_MPI
  return true;
#else
  return false;
#endif
}

Transport chosen_transport(const RuntimeOptions& options) {
  if (options.transport != Transport::kAuto) return options.transport;
  if (!built_with_mpi() || elastic_requested()) return Transport::kTcp;
  if (started_by_mpi_launcher()) return Transport::kMpi;
  return tcp_rendezvous_requested() ? Transport::kTcp : Transport::kMpi;
}

std::unique_ptr<Backend> make_backend(const RuntimeOptions& options) {
  if (chosen_transport(options) == Transport::kTcp) return make_tcp_backend(options);
  if (elastic_requested()) {
    throw PreconditionError(Status::precondition_error(
        "CHORUS_ELASTIC_ADDR or CHORUS_RDZV_BACKEND is set (a member of an elastic job), but CHORUS_TRANSPORT=mpi: "
        "elastic training runs over the TCP transport (docs/elastic.md)"));
  }
#if CHORUS_HAVE_MPI
  return make_mpi_backend(options);
#else
  throw PreconditionError(Status::precondition_error(
      "CHORUS_TRANSPORT=mpi, but this Chorus was built without MPI (CHORUS_WITH_MPI=OFF); use tcp or auto"));
#endif
}

}  // namespace chorus::detail
