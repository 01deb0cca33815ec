"""Whole pytrees at once: broadcast_parameters (one broadcast per dtype,
the leaves packed together) and the objects (chorus.objects)."""
import jax
import jax.numpy as jnp

from ..process_sets import global_process_set
from .mpi_ops import broadcast


def broadcast_parameters(params, root_rank=0, process_set=global_process_set, name="broadcast_parameters"):
    """root_rank's pytree on every rank (a new pytree: JAX arrays are
    immutable). The leaves of one dtype go as one packed broadcast, so a
    model's parameters cost one call per dtype, not one per leaf."""
    leaves, tree = jax.tree_util.tree_flatten(params)
    arrays = [jnp.asarray(x) for x in leaves]
    out = list(arrays)
    for dtype in sorted({a.dtype for a in arrays}, key=str):
        members = [i for i, a in enumerate(arrays) if a.dtype == dtype]
        packed = jnp.concatenate([arrays[i].reshape(-1) for i in members])
        packed = broadcast(packed, root_rank, name=f"{name}.{dtype}", process_set=process_set)
        offset = 0
        for i in members:
            n = arrays[i].size
            out[i] = packed[offset:offset + n].reshape(arrays[i].shape)
            offset += n
    return jax.tree_util.tree_unflatten(tree, out)
