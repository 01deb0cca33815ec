#include "comm/backend_choice.h"

#include "comm/tcp/tcp_backend.h"
#include "comm/tcp/tcp_job_env.h"

namespace chorus::detail {

std::unique_ptr<Backend> make_mpi_backend(const RuntimeOptions& options);  // comm/mpi/mpi_backend.cc

Transport chosen_transport(const RuntimeOptions& options) {
  if (options.transport != Transport::kAuto) return options.transport;
  if (started_by_mpi_launcher()) return Transport::kMpi;
  return tcp_rendezvous_requested() ? Transport::kTcp : Transport::kMpi;
}

std::unique_ptr<Backend> make_backend(const RuntimeOptions& options) {
  return chosen_transport(options) == Transport::kTcp ? make_tcp_backend(options) : make_mpi_backend(options);
}

}  // namespace chorus::detail
