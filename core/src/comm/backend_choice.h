#pragma once
// Which transport a Runtime built from options gets (CHORUS_TRANSPORT):
// MPI under an MPI launcher, TCP when the environment names a rendezvous
// (torchrun's, Slurm's or Chorus's variables), MPI otherwise.

#include <memory>

#include "chorus/options.h"
#include "comm/backend.h"

namespace chorus::detail {

/// The transport `options.transport` and the environment choose.
Transport chosen_transport(const RuntimeOptions& options);

/// The backend of that transport for this process's whole job.
std::unique_ptr<Backend> make_backend(const RuntimeOptions& options);

}  // namespace chorus::detail
