"""Data-parallel training with optax: the gradient pytree averaged over the
ranks in one grouped allreduce (fused by the engine), inside the jitted
train step.

    tx = chorus.jax.optax.DistributedGradientTransformation(optax.adam(1e-3))
    # or: optax.chain(chorus.jax.optax.allreduce_gradients(), optax.adam(1e-3))

backward_passes_per_step accumulates that many local gradients before one
allreduce and one step of the wrapped optimizer (Horovod's)."""
import jax
import jax.numpy as jnp
import optax as _optax

from .. import ops as O
from ..process_sets import global_process_set
from .compression import Compression
from .mpi_ops import grouped_allreduce


def _reduce(grads, op, compression, process_set, name):
    leaves, tree = jax.tree_util.tree_flatten(grads)
    if not leaves:
        return grads
    packed = [compression.compress(g) for g in leaves]
    reduced = grouped_allreduce([p for p, _ in packed], op=op, name=name, process_set=process_set)
    return jax.tree_util.tree_unflatten(tree, [compression.decompress(r, ctx) for r, (_, ctx) in
                                               zip(reduced, packed)])


def allreduce_gradients(op=O.Average, compression=Compression.none, process_set=global_process_set, name=None):
    """An optax GradientTransformation: the updates (gradients) reduced over
    the ranks of `process_set` (Average by default) in one grouped call."""
    def init(params):
        del params
        return _optax.EmptyState()

    def update(updates, state, params=None):
        del params
        return _reduce(updates, op, compression, process_set, name), state

    return _optax.GradientTransformation(init, update)


def DistributedGradientTransformation(optimizer, op=O.Average, compression=Compression.none,  # noqa: N802
                                      backward_passes_per_step=1, average_aggregated_gradients=False,
                                      process_set=global_process_set, name=None):
    """`optimizer` (an optax GradientTransformation) stepping on gradients
    reduced over the ranks. With backward_passes_per_step = k > 1 the
    local gradients of k calls are summed (averaged with
    average_aggregated_gradients) and reduced at the k-th, where the
    optimizer steps; the calls between return zero updates and leave the
    optimizer's state alone."""
    if backward_passes_per_step < 1:
        raise ValueError(f"chorus.jax.optax: backward_passes_per_step must be >= 1, not {backward_passes_per_step}")
    reduce = allreduce_gradients(op, compression, process_set, name)
    if backward_passes_per_step == 1:
        return _optax.chain(reduce, optimizer)
    k = backward_passes_per_step

    def init(params):
        zeros = jax.tree_util.tree_map(jnp.zeros_like, params)
        return AccumulationState(jnp.zeros((), jnp.int32), zeros, optimizer.init(params))

    def update(grads, state, params=None):
        acc = jax.tree_util.tree_map(jnp.add, state.accumulated, grads)
        count = state.count + 1

        def step(_):
            total = acc if not average_aggregated_gradients else jax.tree_util.tree_map(lambda g: g / k, acc)
            reduced = _reduce(total, op, compression, process_set, name)
            updates, inner = optimizer.update(reduced, state.inner, params)
            return updates, AccumulationState(jnp.zeros((), jnp.int32),
                                              jax.tree_util.tree_map(jnp.zeros_like, acc), inner)

        def wait(_):
            return jax.tree_util.tree_map(jnp.zeros_like, grads), AccumulationState(count, acc, state.inner)

        # Every rank counts the same calls, so every rank takes the same branch.
        return jax.lax.cond(count >= k, step, wait, None)

    return _optax.GradientTransformation(init, update)


class AccumulationState(tuple):
    """(count, accumulated gradients, the wrapped optimizer's state)."""

    def __new__(cls, count, accumulated, inner):
        return super().__new__(cls, (count, accumulated, inner))

    count = property(lambda self: self[0])
    accumulated = property(lambda self: self[1])
    inner = property(lambda self: self[2])


jax.tree_util.register_pytree_node(AccumulationState, lambda s: (tuple(s), None),
                                   lambda _, children: AccumulationState(*children))
