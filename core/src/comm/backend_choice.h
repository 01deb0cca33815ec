#pragma once
// Which transport a Runtime built from options gets (CHORUS_TRANSPORT):
// MPI under an MPI launcher, TCP when the environment names a rendezvous
// (torchrun's, Slurm's or Chorus's variables), MPI otherwise; TCP always
// in a library built without MPI.

#include <memory>

#include "chorus/options.h"
#include "comm/backend.h"

namespace chorus::detail {

/// Whether this library has the MPI transport (CHORUS_WITH_MPI).
bool built_with_mpi();

/// The transport `options.transport` and the environment choose: TCP
/// always when built without MPI.
Transport chosen_transport(const RuntimeOptions& options);

/// The backend of that transport for this process's whole job. Throws
/// PreconditionError for MPI in a library built without it.
std::unique_ptr<Backend> make_backend(const RuntimeOptions& options);

}  // namespace chorus::detail
