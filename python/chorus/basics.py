"""Lifecycle, place in the job and what the library was built with
(Horovod's horovod.common.basics)."""
import atexit

from ._library import lib
from .handles import check


def init(comm=None, process_sets=None):
    """Starts Chorus on this rank (every rank calls it). Settings come from
    the environment (MPI under mpirun/chorusrun, else torchrun's variables:
    the TCP transport). `process_sets`: ProcessSets to register at once, as
    Horovod's init takes them. `comm` (an mpi4py communicator) is not
    supported: pass None."""
    if comm is not None:
        raise ValueError("chorus.init: comm (an MPI communicator) is not supported; Chorus starts its own world "
                         "(use process sets for a subset of the ranks)")
    if lib.chorus_is_running() != 1:  # a new runtime starts (after this rank's shutdown or another's)
        from . import naming
        naming.reset()  # unnamed collectives are numbered from 0 again, on every rank alike
    check(lib.chorus_init())
    from . import process_sets as ps
    ps._after_init()
    sets = [s if isinstance(s, ps.ProcessSet) else ps.ProcessSet(s) for s in process_sets or ()]
    duplicate = ps.first_duplicate(sets)
    if duplicate is not None:  # as Horovod's init: refused, and not initialized (every rank alike)
        shutdown()
        raise ValueError(f"chorus.init: process_sets entry number {duplicate[0]} is a duplicate: {duplicate[1]} "
                         "(of the global set or an earlier entry); Chorus was not initialized")
    for s in sets:
        ps.add_process_set(s)


# What a framework runs before the runtime stops: its own queued work that
# may still call Chorus drains first (chorus.jax: JAX dispatches jitted
# steps asynchronously, so the last steps' collectives may not have run yet
# when the program ends).
_before_shutdown = []


def _drain_frameworks():
    for drain in _before_shutdown:
        drain()


def shutdown():
    """Stops Chorus on this rank; pending operations fail. init() may follow."""
    from . import process_sets as ps
    try:
        if lib.chorus_is_initialized() == 1:
            _drain_frameworks()
        check(lib.chorus_shutdown())
    finally:  # the sets end with the runtime, also one that already shut itself down (a lost rank)
        ps._after_shutdown()


def is_initialized():
    """True from this rank's init() until its own shutdown(), as Horovod's:
    another rank's shutdown() does not change it (collectives then fail,
    naming that rank)."""
    return lib.chorus_is_initialized() == 1


def is_running():
    """True while the runtime runs: no rank has shut it down. init() after
    that starts a new one."""
    return lib.chorus_is_running() == 1


def rank():
    """This process's rank in the job."""
    return check(lib.chorus_rank())


def size():
    return check(lib.chorus_size())


def local_rank():
    """The rank among the ranks of this host."""
    return check(lib.chorus_local_rank())


def local_size():
    return check(lib.chorus_local_size())


def cross_rank():
    """The index of this host among the hosts."""
    return check(lib.chorus_cross_rank())


def cross_size():
    return check(lib.chorus_cross_size())


def is_homogeneous():
    """True when every host runs the same number of ranks."""
    return check(lib.chorus_is_homogeneous()) == 1


def mpi_built():
    return lib.chorus_mpi_built() == 1


def cuda_built():
    return lib.chorus_cuda_built() == 1


def nccl_built():
    """The NCCL version code built against (22809 for 2.28.9), 0 without NCCL (Horovod's int too)."""
    return lib.chorus_nccl_built()


def mpi_enabled():
    return lib.chorus_mpi_enabled() == 1


def tcp_enabled():
    """True when the job runs over Chorus's own TCP transport (Horovod's gloo_enabled)."""
    return lib.chorus_tcp_enabled() == 1


def mpi_threads_supported():
    """Horovod's: whether MPI runs with multiple-thread support; Chorus makes
    every MPI call on its background thread, so nothing more is needed."""
    return mpi_enabled()


# Horovod's other build queries: backends Chorus does not have.
def gloo_built():
    return False


def gloo_enabled():
    return False


def rocm_built():
    return False


def ddl_built():
    return False


def ccl_built():
    return False


def _shutdown_at_exit():
    if lib.chorus_is_initialized() == 1:
        try:
            _drain_frameworks()
        except Exception:  # noqa: BLE001 (the program is ending: its own error was already raised)
            pass
        lib.chorus_shutdown()


atexit.register(_shutdown_at_exit)
