"""horovod's collectives on jax.Array, inside and outside jax.jit.

Inside a trace (jit, grad, vmap, scan, and any call on a bfloat16 array)
each collective is a primitive lowered to Chorus's FFI handler
(primitives.py); concrete arrays outside a trace go through Chorus's NumPy
path (chorus.allreduce, ...), which also takes per-rank first dimensions
and alltoall splits that a trace cannot know. Differentiation follows
chorus.torch's (Horovod's) formulas: allreduce's gradient is the same
allreduce of the cotangent; allgather's and broadcast's average it over
the set (broadcast: zero off the root); alltoall sends it back;
reducescatter gathers it, times the set size for Sum. The backward
collective of a call named N is named N + '.grad'."""
import functools

import jax
import jax.numpy as jnp
import numpy as np

import chorus as _core

from .. import ops as O
from ..errors import InvalidArgumentError
from ..process_sets import global_process_set, set_id
from . import _compat as J
from . import primitives as P

_BF16 = jnp.dtype(jnp.bfloat16)


def _array(value, what):
    if isinstance(value, (J.Tracer, jax.Array)):
        return value
    try:
        return jnp.asarray(value)
    except TypeError as e:
        raise TypeError(f"chorus.jax: {what} takes a jax.Array (or what converts to one), not "
                        f"{type(value).__name__}") from e


_NO_ROWS = "takes arrays of at least one dimension (rows), not a scalar"
# What Chorus carries (bool: Min and Max only, refused by the core otherwise).
_CARRIED = tuple(np.dtype(t) for t in ("uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64",
                                       "bool")) + (_BF16,)


def _dtype_refusal(leaves):
    for a in leaves:
        if a.dtype not in _CARRIED:
            return f"does not take {a.dtype} arrays ({', '.join(str(t) for t in _CARRIED)})"
    return ""


def _rows_refusal(leaves):
    return _dtype_refusal(leaves) or (_NO_ROWS if any(x.ndim == 0 for x in leaves) else "")


def _with_rows(leaves, rows):
    """The avals of leaves whose first dimension becomes rows(x) (scalars kept)."""
    return [J.ShapedArray(((rows(x),) + tuple(x.shape[1:])) if x.ndim else (), x.dtype) for x in leaves]


def _refused(kind, leaves, name, process_set, why, results):
    """Inside a trace, a call this rank cannot make (its shapes): lowered as
    a refusal that fails the call on every rank at run time, naming this
    rank and `why`, so no rank waits for it (a dtype Chorus does not carry
    is refused the same way by the handlers and, outside a trace, by the
    core). `results`: the avals the call would have had."""
    return P.refused_p.bind(*leaves, kind=kind, name=name, why=f"chorus.jax: {kind} {why}",
                            process_set=set_id(process_set),
                            results=tuple((tuple(a.shape), str(jnp.dtype(a.dtype))) for a in results))


def _traced(arrays):
    """Through the primitives: inside a trace, or for what NumPy cannot carry (bfloat16)."""
    return any(isinstance(a, J.Tracer) or a.dtype == _BF16 for a in arrays)


def _check_name(name):
    if name is not None and not isinstance(name, str):
        raise TypeError(f"chorus.jax: a collective's name must be a str, not {type(name).__name__}")
    return name or ""


def _grad_name(name):
    return name + ".grad" if name else ""


def _differentiable(op, what, name):
    if op not in (O.Sum, O.Average):
        raise InvalidArgumentError(f"chorus.jax: {what} '{name or '(unnamed)'}' with {O.NAMES[op]} has no "
                                   "gradient; only Sum and Average are differentiable")


def _numpy(a):
    return np.asarray(a)


# ---- allreduce ----
@functools.partial(jax.custom_vjp, nondiff_argnums=(0,))
def _allreduce_traced(params, xs):
    name, op, pre, post, ps = params
    return tuple(P.allreduce_p.bind(*xs, name=name, op=op, prescale=pre, postscale=post, process_set=ps))


def _allreduce_fwd(params, xs):
    return _allreduce_traced(params, xs), None


def _allreduce_bwd(params, _, grads):
    name, op, pre, post, ps = params
    _differentiable(op, "allreduce", name)
    return (tuple(P.allreduce_p.bind(*grads, name=_grad_name(name), op=op, prescale=pre, postscale=post,
                                     process_set=ps)),)


_allreduce_traced.defvjp(_allreduce_fwd, _allreduce_bwd)


def grouped_allreduce(tensors, average=None, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0,
                      process_set=global_process_set):
    """Every leaf of the pytree `tensors` reduced over the ranks in one
    grouped call (negotiated and fused together); the same pytree back."""
    op = O.resolve(op, average)
    leaves, tree = jax.tree_util.tree_flatten(tensors)
    if not leaves:
        return tensors
    leaves = [_array(x, "grouped_allreduce") for x in leaves]
    if op == O.Adasum and any(not jnp.issubdtype(x.dtype, jnp.floating) for x in leaves):
        raise TypeError("chorus.jax: Adasum takes floating-point arrays only")
    name = _check_name(name)
    if _traced(leaves) and _dtype_refusal(leaves):
        out = _refused("allreduce", leaves, name, process_set, _dtype_refusal(leaves), leaves)
    elif _traced(leaves):
        params = (name, int(op), float(prescale_factor), float(postscale_factor), set_id(process_set))
        out = _allreduce_traced(params, tuple(leaves))
    elif len(leaves) == 1:  # one array: its errors name it alone, not a group
        out = [jnp.asarray(_core.allreduce(_numpy(leaves[0]), name=name or None, op=op,
                                           prescale_factor=prescale_factor, postscale_factor=postscale_factor,
                                           process_set=process_set))]
    else:
        out = [jnp.asarray(r) for r in _core.grouped_allreduce(
            [_numpy(x) for x in leaves], name=name or None, op=op, prescale_factor=prescale_factor,
            postscale_factor=postscale_factor, process_set=process_set)]
    return jax.tree_util.tree_unflatten(tree, list(out))


def allreduce(tensor, average=None, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0,
              process_set=global_process_set):
    """The tensor reduced over the ranks (op: Average by default, Sum, Min,
    Max, Product, Adasum), with Horovod's pre/post scale factors."""
    (out,) = grouped_allreduce([tensor], average, name, op, prescale_factor, postscale_factor, process_set)
    return out


# ---- allgather and reducescatter: per-rank rows ----
def _set_size_rank(process_set):
    return process_set.size(), process_set.rank()


def _scatter_rows(rows, size, rank):
    return rows // size + (1 if rank < rows % size else 0)


@functools.partial(jax.custom_vjp, nondiff_argnums=(0,))
def _allgather_traced(params, xs):
    name, ps, size, _ = params
    return tuple(P.allgather_p.bind(*xs, name=name, process_set=ps, rows=tuple(x.shape[0] * size for x in xs)))


def _allgather_fwd(params, xs):
    return _allgather_traced(params, xs), tuple(x.shape[0] for x in xs)


def _allgather_bwd(params, rows, grads):
    name, ps, _, rank = params
    averaged = P.allreduce_p.bind(*grads, name=_grad_name(name), op=int(O.Average), prescale=1.0, postscale=1.0,
                                  process_set=ps)
    return (tuple(jax.lax.slice_in_dim(g, rank * r, (rank + 1) * r, axis=0) for g, r in zip(averaged, rows)),)


_allgather_traced.defvjp(_allgather_fwd, _allgather_bwd)


def grouped_allgather(tensors, name=None, process_set=global_process_set):
    """Each leaf's rows of every rank, in rank order, in one grouped call.
    Inside jax.jit every rank's first dimension must be the one traced
    (equal on every rank: the result's shape is fixed when traced)."""
    leaves, tree = jax.tree_util.tree_flatten(tensors)
    if not leaves:
        return tensors
    leaves = [_array(x, "grouped_allgather") for x in leaves]
    name = _check_name(name)
    if _traced(leaves):
        size, rank = _set_size_rank(process_set)
        if _rows_refusal(leaves):
            out = _refused("allgather", leaves, name, process_set, _rows_refusal(leaves),
                           _with_rows(leaves, lambda x: x.shape[0] * size))
            return jax.tree_util.tree_unflatten(tree, list(out))
        out = _allgather_traced((name, set_id(process_set), size, rank), tuple(leaves))
    else:
        out = [jnp.asarray(r) for r in _core.grouped_allgather([_numpy(x) for x in leaves], name=name or None,
                                                                process_set=process_set)]
    return jax.tree_util.tree_unflatten(tree, list(out))


def allgather(tensor, name=None, process_set=global_process_set):
    """Every rank's rows (first dimension) in rank order."""
    (out,) = grouped_allgather([tensor], name, process_set)
    return out


@functools.partial(jax.custom_vjp, nondiff_argnums=(0,))
def _reducescatter_traced(params, xs):
    name, op, pre, post, ps, size, rank = params
    rows = tuple(_scatter_rows(x.shape[0], size, rank) for x in xs)
    return tuple(P.reducescatter_p.bind(*xs, name=name, op=op, prescale=pre, postscale=post, process_set=ps,
                                        rows=rows))


def _reducescatter_fwd(params, xs):
    return _reducescatter_traced(params, xs), tuple(x.shape[0] for x in xs)


def _reducescatter_bwd(params, rows, grads):
    name, op, pre, post, ps, size, _ = params
    _differentiable(op, "reducescatter", name)
    gathered = P.allgather_p.bind(*grads, name=_grad_name(name), process_set=ps, rows=rows)
    scale = pre * post * (size if op == O.Sum else 1)
    return (tuple(g if scale == 1 else g * jnp.asarray(scale, g.dtype) for g in gathered),)


_reducescatter_traced.defvjp(_reducescatter_fwd, _reducescatter_bwd)


def grouped_reducescatter(tensors, name=None, op=O.Average, process_set=global_process_set, prescale_factor=1.0,
                          postscale_factor=1.0):
    """Each leaf reduced over the ranks, this rank keeping its block of rows
    (the first rows mod the set size one row more), in one grouped call."""
    op = O.resolve(op)
    if op == O.Adasum:
        raise NotImplementedError("chorus.jax: reducescatter does not support Adasum")
    leaves, tree = jax.tree_util.tree_flatten(tensors)
    if not leaves:
        return tensors
    leaves = [_array(x, "grouped_reducescatter") for x in leaves]
    name = _check_name(name)
    if _traced(leaves):
        size, rank = _set_size_rank(process_set)
        if _rows_refusal(leaves):
            out = _refused("reducescatter", leaves, name, process_set, _rows_refusal(leaves),
                           _with_rows(leaves, lambda x: _scatter_rows(x.shape[0], size, rank)))
            return jax.tree_util.tree_unflatten(tree, list(out))
        params = (name, int(op), float(prescale_factor), float(postscale_factor), set_id(process_set), size, rank)
        out = _reducescatter_traced(params, tuple(leaves))
    else:
        out = [jnp.asarray(r) for r in _core.grouped_reducescatter(
            [_numpy(x) for x in leaves], name=name or None, op=op, process_set=process_set,
            prescale_factor=prescale_factor, postscale_factor=postscale_factor)]
    return jax.tree_util.tree_unflatten(tree, list(out))


def reducescatter(tensor, name=None, op=O.Average, process_set=global_process_set, prescale_factor=1.0,
                  postscale_factor=1.0):
    """The tensor reduced over the ranks (Average by default), this rank keeping its block of rows."""
    (out,) = grouped_reducescatter([tensor], name, op, process_set, prescale_factor, postscale_factor)
    return out


# ---- broadcast and alltoall ----
@functools.partial(jax.custom_vjp, nondiff_argnums=(0,))
def _broadcast_traced(params, x):
    name, root, ps, _ = params
    (out,) = P.broadcast_p.bind(x, name=name, root_rank=root, process_set=ps)
    return out


def _broadcast_fwd(params, x):
    return _broadcast_traced(params, x), None


def _broadcast_bwd(params, _, grad):
    name, root, ps, rank = params
    (averaged,) = P.allreduce_p.bind(grad, name=_grad_name(name), op=int(O.Average), prescale=1.0, postscale=1.0,
                                     process_set=ps)
    return (averaged if rank == root else jnp.zeros_like(averaged),)


_broadcast_traced.defvjp(_broadcast_fwd, _broadcast_bwd)


def broadcast(tensor, root_rank, name=None, process_set=global_process_set):
    """root_rank's tensor on every rank of the set."""
    x = _array(tensor, "broadcast")
    name = _check_name(name)
    if _traced([x]) and _dtype_refusal([x]):
        return _refused("broadcast", [x], name, process_set, _dtype_refusal([x]), [x])[0]
    if _traced([x]):
        return _broadcast_traced((name, int(root_rank), set_id(process_set), _core.rank()), x)
    return jnp.asarray(_core.broadcast(_numpy(x), root_rank, name=name or None, process_set=process_set))


@functools.partial(jax.custom_vjp, nondiff_argnums=(0,))
def _alltoall_traced(params, x):
    name, ps = params
    (out,) = P.alltoall_p.bind(x, name=name, process_set=ps)
    return out


def _alltoall_fwd(params, x):
    return _alltoall_traced(params, x), None


def _alltoall_bwd(params, _, grad):
    name, ps = params
    (back,) = P.alltoall_p.bind(grad, name=_grad_name(name), process_set=ps)
    return (back,)


_alltoall_traced.defvjp(_alltoall_fwd, _alltoall_bwd)


def _alltoall_refusal(x, splits, size):
    """Why this rank cannot make a traced alltoall of `x`, or ''."""
    if _rows_refusal([x]):
        return _rows_refusal([x])
    if splits is not None:
        return ("inside a trace (jax.jit, grad, bfloat16) sends equal splits only: its result's shape is fixed "
                "when traced; call it outside jax.jit for other splits")
    if x.shape[0] % size:
        return f"inside a trace splits the first dimension evenly; {x.shape[0]} rows do not split over {size} ranks"
    return ""


def alltoall(tensor, splits=None, name=None, process_set=global_process_set):
    """Rank i sends splits[j] rows of its first dimension to rank j; the
    received rows in rank order. With `splits` (outside a trace), Horovod's
    (output, received_splits). Inside jax.jit the splits are equal: the
    first dimension, divisible by the set size, splits evenly."""
    x = _array(tensor, "alltoall")
    name = _check_name(name)
    if _traced([x]):
        why = _alltoall_refusal(x, splits, process_set.size())
        if why:
            return _refused("alltoall", [x], name, process_set, why, [x])[0]
        return _alltoall_traced((name, set_id(process_set)), x)
    result = _core.alltoall(_numpy(x), splits=None if splits is None else np.asarray(splits), name=name or None,
                            process_set=process_set)
    if splits is None:
        return jnp.asarray(result)
    output, received = result
    return jnp.asarray(output), jnp.asarray(received)


# ---- synchronization ----
def barrier(process_set=global_process_set):
    """Waits for every rank of the set (inside jax.jit too, in program order)."""
    if _inside_trace():
        P.barrier_p.bind(process_set=set_id(process_set))
        return None
    return _core.barrier(process_set)


def join():
    """This rank is out of data (Horovod's join): the rank that joined last."""
    if _inside_trace():
        return P.join_p.bind()[0]
    return _core.join()


def _inside_trace():
    return not J.trace_state_clean()
