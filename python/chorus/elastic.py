"""Elastic training (horovod.common.elastic): state that survives a change of
the world, and run(), which retries the training function in the new world.

    state = chorus.elastic.ObjectState(chorus.broadcast_object, chorus.rank, epoch=0)

    @chorus.elastic.run
    def train(state):
        for state.epoch in range(state.epoch, epochs):
            ...
            state.commit()          # save, then stop here if hosts came or go

chorus.torch.elastic adds TorchState (model, optimizer, samplers) and
ElasticSampler. Only an elastic job recovers (chorusrun with --min-np/--max-np
or --host-discovery-script, etcd's CHORUS_RDZV_BACKEND, or a driver holding
the rendezvous: chorus.ray.ElasticRayExecutor); anywhere else run() calls
the function once.
"""
import copy
import ctypes
import functools

import numpy as np

from . import ops
from ._library import lib
from .arrays import _front
from .basics import init, is_initialized, is_running, mpi_enabled, shutdown
from .errors import AbortedError, HorovodInternalError, PreconditionError
from .handles import check
from .process_sets import global_process_set

__all__ = ["HostsUpdatedInterrupt", "HorovodInternalError", "State", "ObjectState", "run", "run_fn", "enabled",
           "host_updates", "HOSTS_ADDED", "HOSTS_REMOVED"]

# chorus_elastic_host_updates' kinds (Horovod's HostUpdateResult.added and .removed).
HOSTS_ADDED = 1
HOSTS_REMOVED = 2


class HostsUpdatedInterrupt(RuntimeError):
    """Hosts were added or removed (Horovod's): raised by commit() or
    check_host_updates() on every rank at once; run() resets the world and
    calls the function again. `skip_sync` is Horovod's and ignored: run()
    always syncs after a reset (see run_fn)."""

    def __init__(self, skip_sync=False, generation=0, kinds=0):
        super().__init__(f"chorus: hosts updated (generation {generation}, kinds {kinds})")
        self.skip_sync = skip_sync
        self.generation = generation
        self.kinds = kinds


def enabled():
    """True when this process belongs to an elastic job (callable before init)."""
    return lib.chorus_elastic_enabled() == 1


def host_updates():
    """(generation, kinds) of the latest host-update notice this process got
    from the elastic rendezvous; (0, 0) before any, and outside an elastic job."""
    if not enabled():
        return 0, 0
    generation, kinds = ctypes.c_int64(0), ctypes.c_int(0)
    check(lib.chorus_elastic_host_updates(ctypes.byref(generation), ctypes.byref(kinds)))
    return generation.value, kinds.value


def _max_over_ranks(values, name):
    """Every rank's int64 `values`, reduced element-wise with MAX over the world."""
    arr = np.asarray(values, dtype=np.int64)
    return _front.allreduce_async(arr, ops.Max, name, 1.0, 1.0, global_process_set).wait()


class State:
    """What a training function needs to go on after the world changes
    (Horovod's horovod.common.elastic.State). Subclasses define save(),
    restore() and sync()."""

    def __init__(self, bcast_object, get_rank):
        self._bcast_object = bcast_object
        self._rank = get_rank
        self._reset_callbacks = []
        self._last_generation = 0  # the last host-update generation the ranks agreed on, in this world

    def register_reset_callbacks(self, callbacks):
        """Functions called after each reset, in the new world (e.g. to scale
        the learning rate with the new size)."""
        self._reset_callbacks.extend(callbacks)

    def on_reset(self):
        # A new world: the rendezvous counts notices from its formation, on every rank alike
        # (chorus::elastic::State::on_reset does the same).
        self._last_generation = 0
        for callback in self._reset_callbacks:
            callback()

    def commit(self):
        """Saves the state (what restore() goes back to after a lost rank),
        then raises HostsUpdatedInterrupt if hosts were added or removed.
        A collective: every rank commits at the same points."""
        self.save()
        self.check_host_updates()

    def check_host_updates(self):
        """Raises HostsUpdatedInterrupt on every rank when any rank got a
        host-update notice newer than the last one agreed on. A collective."""
        generation, kinds = host_updates()
        # MAX of (generation, added, removed): a MAX per bit is an OR of the kinds. The
        # C++ State's layout and name, so a LibTorch rank and a Python rank agree too.
        agreed = _max_over_ranks([generation, kinds & HOSTS_ADDED, (kinds & HOSTS_REMOVED) >> 1],
                                 "chorus.elastic.host_updates")
        agreed_generation = int(agreed[0])
        if agreed_generation > self._last_generation:
            self._last_generation = agreed_generation
            agreed_kinds = int(agreed[1]) * HOSTS_ADDED | int(agreed[2]) * HOSTS_REMOVED
            # skip_sync as Horovod sets it (only removed); run() syncs anyway.
            raise HostsUpdatedInterrupt(agreed_kinds == HOSTS_REMOVED, agreed_generation, agreed_kinds)

    def save(self):
        """Keeps a copy of the state in host memory."""
        raise NotImplementedError()

    def restore(self):
        """Goes back to the last saved state, dropping what came after."""
        raise NotImplementedError()

    def sync(self):
        """Makes every rank's state rank 0's (a collective)."""
        raise NotImplementedError()


def _check_names(state, names):
    """A user value may not hide the state's own attributes (commit, save, ...)."""
    clash = sorted(n for n in names if n.startswith("_") or hasattr(type(state), n))
    if clash:
        raise ValueError(f"chorus.elastic: these names are taken by the state object itself: {', '.join(clash)}")


class ObjectState(State):
    """Picklable Python values, given as keyword arguments and kept as
    attributes (state.epoch, state.batch). save() deep-copies them, so a value
    changed in place after a commit is restored too (Horovod keeps a reference)."""

    def __init__(self, bcast_object, get_rank, **kwargs):
        _check_names(self, kwargs)
        super().__init__(bcast_object, get_rank)
        self._saved_state = copy.deepcopy(kwargs)
        for name, value in kwargs.items():
            setattr(self, name, value)

    def save(self):
        self._saved_state = copy.deepcopy({name: getattr(self, name) for name in self._saved_state})

    def restore(self):
        self._set_attrs()

    def sync(self):
        if self._saved_state:
            self._saved_state = self._bcast_object(self._saved_state)
            self._set_attrs()

    def _set_attrs(self):
        # Copies: the saved state stays as committed while the attributes change.
        for name, value in copy.deepcopy(self._saved_state).items():
            setattr(self, name, value)


def _reset():
    """The world again: in an elastic job init() rendezvouses and returns
    with the new rank and size. Process sets end with the old world; register
    them again in a reset callback."""
    shutdown()
    init()


def _world_lost(error):
    """A collective failed because a rank stopped: the runtime shut itself
    down (AbortedError; a topology query in between gets PreconditionError)."""
    return isinstance(error, AbortedError) or (isinstance(error, PreconditionError) and not is_running())


def _check_can_run():
    if not is_initialized():
        raise PreconditionError("chorus.elastic.run: call chorus.init() before the elastic function")
    if mpi_enabled():
        raise PreconditionError("chorus.elastic.run: elastic training needs the TCP transport, and this job runs "
                                "over MPI; start it with chorusrun --tcp and --min-np/--max-np or "
                                "--host-discovery-script")


def _run_once(func, state, args, kwargs):
    """Outside an elastic job: one sync and one call; a lost rank ends the job."""
    try:
        state.sync()
        return func(state, *args, **kwargs)
    except AbortedError as e:
        raise AbortedError(f"{e} (chorus.elastic.run: this job is not elastic, so nothing recovers; start it with "
                           "chorusrun --tcp and --min-np/--max-np or --host-discovery-script)") from e


def run_fn(func, reset):
    """run() with another `reset` (Horovod's run_fn)."""

    @functools.wraps(func)
    def wrapper(state, *args, **kwargs):
        _check_can_run()
        if not enabled():
            return _run_once(func, state, args, kwargs)
        while True:
            try:
                # Always synced, after every reset: horovod#3494 deadlocks when one
                # rank skips the sync (skip_sync) and another does not.
                state.sync()
                return func(state, *args, **kwargs)
            except HostsUpdatedInterrupt:
                pass  # raised at a commit: the state is the committed one
            except (AbortedError, PreconditionError) as e:
                if not _world_lost(e):
                    raise
                state.restore()  # what came after the last commit may differ between ranks
            reset()
            state.on_reset()
    return wrapper


def run_translating(func, translate, reset=None):
    """run_fn(func, reset) for a framework whose collectives fail with its own
    error type inside a compiled function (TensorFlow's graphs, jax.jit):
    `translate(error)` gives the Chorus error it stands for (AbortedError for
    a lost rank), or None to let it propagate as it is."""

    @functools.wraps(func)
    def translated(state, *args, **kwargs):
        try:
            return func(state, *args, **kwargs)
        except Exception as e:  # noqa: BLE001 (translate decides; the rest propagates unchanged)
            chorus_error = translate(e)
            if chorus_error is None:
                raise
            raise chorus_error from e
    return run_fn(translated, reset or _reset)


def run(func):
    """Decorator (Horovod's hvd.elastic.run): `func(state, *args, **kwargs)` is
    called after a sync of `state` from rank 0; when a rank is lost
    (AbortedError), the state goes back to its last commit, the world is
    formed again (shutdown(), init()) and func is called again; when hosts are
    added or removed (HostsUpdatedInterrupt from commit), the same without the
    restore. Any other error propagates at once (InvalidArgumentError is a
    bug, not a lost rank). Needs chorus.init() first; over MPI it refuses
    (PreconditionError), outside an elastic job it calls func once."""
    return run_fn(func, _reset)
