#pragma once
// MPI's process-wide lifetime. MPI can be initialized once per process and
// never again after MPI_Finalize, while Chorus can be init()-ed and
// shutdown() many times, each time on a new background thread. So:
//  - Chorus needs at least MPI_THREAD_SERIALIZED: every MPI call of the
//    global set is made by its one background thread, but successive
//    runtimes use different threads, and MPI_Finalize runs on the exiting
//    main thread; SERIALIZED (one thread at a time, any thread) allows that.
//  - It asks for MPI_THREAD_MULTIPLE: each process set runs on a background
//    thread of its own, making MPI calls on its own communicators at the
//    same time as the global set's thread. With less, process sets are
//    refused (comm/mpi/mpi_backend.cc) and the rest works.
//  - If the program initialized MPI itself, Chorus uses it and leaves the
//    finalizing to the program; otherwise an exit hook finalizes it.

#include "chorus/status.h"

namespace chorus::detail {

/// Initializes MPI if nobody did, or checks the thread level of the program's own.
Status ensure_mpi_initialized();

}  // namespace chorus::detail
