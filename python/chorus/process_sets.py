"""Process sets (Horovod's horovod.common.process_sets): a subset of the
ranks that runs collectives among its members only."""
import ctypes

from ._library import lib
from .handles import check


class ProcessSet:
    """A set of global ranks. Register it with add_process_set() (every rank,
    same order) or pass it to init(process_sets=[...]); then pass it as
    `process_set=` to any collective."""

    def __init__(self, ranks):
        if hasattr(ranks, "Get_rank"):
            raise ValueError("chorus.ProcessSet: an MPI communicator is not supported; give the list of ranks")
        self.ranks = sorted(int(r) for r in ranks)
        self.process_set_id = None

    def size(self):
        """The number of ranks in the set; None while it is not registered."""
        if self.process_set_id is None:
            return None
        return check(lib.chorus_process_set_size(self.process_set_id))

    def rank(self):
        """This rank's rank inside the set (None while not registered); a
        ValueError when this rank is not a member."""
        if self.process_set_id is None:
            return None
        if not self.included():
            from .basics import rank
            raise ValueError(f"chorus: rank {rank()} is not a member of {self}")
        return check(lib.chorus_process_set_rank(self.process_set_id))

    def included(self):
        """True when this rank is a member; None while not registered."""
        if self.process_set_id is None:
            return None
        if self.process_set_id == 0:
            return True
        from .basics import rank
        return rank() in self.ranks

    def __repr__(self):
        return f"ProcessSet(process_set_id={self.process_set_id}, ranks={self.ranks})"


global_process_set = ProcessSet([])
global_process_set.process_set_id = 0
_registered = {}  # id -> ProcessSet


def _after_init():
    from .basics import size
    global_process_set.ranks = list(range(size()))


def _after_shutdown():
    for s in _registered.values():
        s.process_set_id = None
    _registered.clear()


def set_id(process_set):
    """The C ABI's id of `process_set` (None: the global set)."""
    if process_set is None:
        return 0
    if not isinstance(process_set, ProcessSet):
        raise TypeError(f"chorus: process_set must be a chorus ProcessSet, not {type(process_set).__name__}")
    if process_set.process_set_id is None or (process_set.process_set_id != 0 and
                                              process_set.process_set_id not in _registered):
        raise ValueError(f"chorus: {process_set} is not registered (add_process_set)")
    return process_set.process_set_id


def add_process_set(process_set):
    """Registers a ProcessSet or a list of ranks on every rank (all call it in
    the same order with the same ranks) and returns the registered ProcessSet."""
    if not isinstance(process_set, ProcessSet):
        process_set = ProcessSet(process_set)
    if process_set.process_set_id is not None:
        raise ValueError(f"chorus.add_process_set: {process_set} is already registered")
    twin = _registered_with(process_set.ranks)
    if twin is not None:  # every rank holds the same registrations: all refuse alike
        raise ValueError(f"chorus.add_process_set: attempted to add a duplicate process set: ranks "
                         f"{process_set.ranks} are {twin} already (as Horovod, one set per group of ranks)")
    ranks = (ctypes.c_int * len(process_set.ranks))(*process_set.ranks)
    process_set.process_set_id = check(lib.chorus_add_process_set(ranks, len(process_set.ranks)))
    _registered[process_set.process_set_id] = process_set
    return process_set


def _registered_with(ranks):
    """The registered set (the global one too) with exactly `ranks`, or None."""
    for s in [global_process_set] + list(_registered.values()):
        if s.ranks == sorted(ranks):
            return s
    return None


def first_duplicate(sets):
    """(index, set) of the first of `sets` whose ranks an earlier one, or the
    global set, has; None when they are all distinct."""
    seen = [global_process_set.ranks]
    for i, s in enumerate(sets):
        if s.ranks in seen:
            return i, s
        seen.append(s.ranks)
    return None


def remove_process_set(process_set):
    """Ends a registered set on every rank (its pending operations fail).
    True when it was removed, False when it was not registered (the global
    set cannot be removed: False, as Horovod)."""
    if process_set.process_set_id in (None, 0) or process_set.process_set_id not in _registered:
        return False
    check(lib.chorus_remove_process_set(process_set.process_set_id))
    del _registered[process_set.process_set_id]
    process_set.process_set_id = None
    return True
