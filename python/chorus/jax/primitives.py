"""The JAX primitives behind chorus.jax's collectives inside a trace (jit,
grad, vmap, scan): their shapes, their lowering to Chorus's FFI handlers,
and vmap's rules. Every one carries an ordered effect, so XLA runs the
collectives of a program in program order, never drops one as dead code,
and orders them across jitted calls as JAX orders ordered effects: the
same order on every rank, which the handlers' names for unnamed calls
("jax.<kind>.<n>", counted as they run) rely on."""
import jax.numpy as jnp
import numpy as np

from .. import ops as O
from . import _compat as J
from ._ffi import target


class _ChorusCollective(J.Effect):
    """Chorus's ordered effect: one token threads every collective."""

    def __hash__(self):
        return 0x43686F72  # the same in every process (cache keys)

    def __eq__(self, other):
        return isinstance(other, _ChorusCollective)


effect = J.ordered_effect(_ChorusCollective)


def _lowering(kind, attribute_names):
    rule = J.ffi.ffi_lowering(target(kind), has_side_effect=True)

    def lower(ctx, *operands, **params):
        token = ctx.tokens_in.get(effect)
        threaded = ctx.replace(avals_in=(*ctx.avals_in, J.abstract_token),
                               avals_out=(*ctx.avals_out, J.abstract_token))
        attributes = {k: _attribute(O.c_code(params[k]) if k == "op" else params[k]) for k in attribute_names}
        results = list(rule(threaded, *operands, token, **attributes))
        ctx.set_tokens_out(J.TokenSet({effect: results.pop()}))
        return results
    return lower


def _attribute(value):
    if isinstance(value, str):
        return value
    if isinstance(value, float):
        return np.float64(value)
    return np.int64(value)


def _primitive(kind, abstract_eval, attribute_names):
    p = J.Primitive("chorus_" + kind)
    p.multiple_results = True
    p.def_impl(lambda *args, **params: J.apply_primitive(p, *args, **params))
    p.def_effectful_abstract_eval(lambda *avals, **params: (abstract_eval(*avals, **params), {effect}))
    J.mlir.register_lowering(p, _lowering(kind, attribute_names), platform="cpu")
    return p


def _same(*avals, **_):
    return [J.ShapedArray(a.shape, a.dtype) for a in avals]


def _with_rows(*avals, rows, **_):
    return [J.ShapedArray((r,) + tuple(a.shape[1:]), a.dtype) for a, r in zip(avals, rows)]


def _declared(*avals, results, **_):
    return [J.ShapedArray(shape, jnp.dtype(dtype)) for shape, dtype in results]


allreduce_p = _primitive("allreduce", _same, ("name", "op", "prescale", "postscale", "process_set"))
allgather_p = _primitive("allgather", _with_rows, ("name", "process_set"))
reducescatter_p = _primitive("reducescatter", _with_rows, ("name", "op", "prescale", "postscale", "process_set"))
broadcast_p = _primitive("broadcast", _same, ("name", "root_rank", "process_set"))
alltoall_p = _primitive("alltoall", _same, ("name", "process_set"))
barrier_p = _primitive("barrier", lambda **_: [], ("process_set",))
join_p = _primitive("join", lambda **_: [J.ShapedArray((), np.int32)], ())
# A call this rank refuses while tracing: results of the declared avals,
# and at run time a refusal that fails the call on every rank.
refused_p = _primitive("refuse", _declared, ("kind", "name", "why", "process_set"))


def _elementwise_batching(p):
    """A collective that treats each element alike: the batch axis is one more axis."""
    def rule(args, dims, **params):
        return p.bind(*args, **params), list(dims)
    J.batching.primitive_batchers[p] = rule


def _allgather_batching(args, dims, rows, **params):
    """Rows are gathered along the first axis: the batch axis goes second."""
    moved = [a if d is J.batching.not_mapped else jnp.moveaxis(a, d, 1) for a, d in zip(args, dims)]
    outs = allgather_p.bind(*moved, rows=rows, **params)
    return outs, [J.batching.not_mapped if d is J.batching.not_mapped else 1 for d in dims]


_elementwise_batching(allreduce_p)
_elementwise_batching(broadcast_p)
J.batching.primitive_batchers[allgather_p] = _allgather_batching
