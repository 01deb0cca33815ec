"""Elastic training with JAX (docs/jax.md): JaxState and run, on the
elastic runtime every Chorus front end shares (docs/elastic.md).

    state = chorus.jax.elastic.JaxState(params=params, opt_state=opt_state, epoch=0)

    @chorus.jax.elastic.run
    def train(state):
        ...  state.params, state.opt_state = step(state.params, state.opt_state, batch)
        state.commit()

Pytrees of arrays (given as `trees`, or the keyword arguments whose leaves
are all arrays) are saved as NumPy copies at each commit, restored after a
lost rank and broadcast from rank 0 after every reset; other keyword
arguments are plain values (ObjectState)."""
import jax
import jax.numpy as jnp
import numpy as np

from .. import elastic as _elastic
from ..basics import is_running, rank
from ..elastic import HorovodInternalError, HostsUpdatedInterrupt, ObjectState, _check_names
from ..errors import AbortedError, PreconditionError
from ..objects import broadcast_object
from .functions import broadcast_parameters

__all__ = ["JaxState", "run", "run_fn", "HostsUpdatedInterrupt", "HorovodInternalError"]


def _is_tree_of_arrays(value):
    leaves = jax.tree_util.tree_leaves(value)
    return bool(leaves) and all(isinstance(x, (jax.Array, np.ndarray)) for x in leaves)


class JaxState(ObjectState):
    """Pytrees of JAX arrays (parameters, optimizer state) and plain values."""

    def __init__(self, **kwargs):
        _check_names(self, kwargs)
        self._tree_names = [k for k, v in kwargs.items() if _is_tree_of_arrays(v)]
        trees = {k: kwargs.pop(k) for k in self._tree_names}
        for k, v in trees.items():
            setattr(self, k, v)
        self._saved_trees = self._copies()
        super().__init__(lambda obj: broadcast_object(obj, 0, "elastic.JaxState"), rank, **kwargs)

    def _copies(self):
        return {k: jax.tree_util.tree_map(lambda x: np.array(x, copy=True), getattr(self, k))
                for k in self._tree_names}

    def save(self):
        self._saved_trees = self._copies()
        super().save()

    def restore(self):
        for k, tree in self._saved_trees.items():
            setattr(self, k, jax.tree_util.tree_map(jnp.asarray, tree))
        super().restore()

    def sync(self):
        for k in self._tree_names:
            setattr(self, k, broadcast_parameters(getattr(self, k), 0, name=f"elastic.JaxState.{k}"))
        self._saved_trees = self._copies()
        super().sync()


def _as_chorus_error(error):
    """A collective inside a jitted function fails with XLA's runtime error
    (jaxlib's XlaRuntimeError, which has no stable import path), whose
    message starts with the status code: ABORTED when a rank is lost."""
    if type(error).__name__ != "XlaRuntimeError":
        return None
    message = str(error)
    if message.startswith("ABORTED"):
        return AbortedError(message)
    if message.startswith("FAILED_PRECONDITION") and not is_running():
        return PreconditionError(message)
    return None


def run_fn(func, reset):
    """chorus.elastic.run_fn for JAX functions (Horovod's run_fn)."""
    return _elastic.run_translating(func, _as_chorus_error, reset)


def run(func):
    """chorus.elastic.run (Horovod's hvd.elastic.run) for a function whose
    collectives may run inside jax.jit: XLA's ABORTED error from a lost rank
    is the loop's AbortedError."""
    return _elastic.run_translating(func, _as_chorus_error)
