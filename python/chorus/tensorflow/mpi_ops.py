"""horovod.tensorflow's collectives on tf.Tensor and tf.Variable, eagerly
and inside tf.function, over Chorus's TensorFlow ops (_op_library): each op
hands its tensors to Chorus and completes when Chorus does, so no
TensorFlow thread waits. The ops are stateful, so a tf.function runs each
once per call, in program order.

Order: inside a graph every Chorus op waits for the one created before it
in that graph (a control dependency), so each rank runs a function's
collectives one at a time in program order and no two ranks wait for two
collectives in opposite orders. (The kernels wait for Chorus on the thread
TensorFlow runs them on: TensorFlow's C API cannot complete an op later.)

Names: a collective's name is what every rank agrees on. Given, it is
used as is. Eagerly, an unnamed call is numbered in call order by the ops
themselves ("allreduce.tf.noname.<n>"). Inside tf.function it is named
when traced, after its input tensor and unique in its graph, as Horovod
names its graph ops ("HorovodAllreduce_<tensor name>")."""
import re
import weakref

import tensorflow as tf

from .. import ops as O
from ..errors import InvalidArgumentError
from ..process_sets import global_process_set, set_id
from ._op_library import ops as _ops
from .compression import Compression

_REDUCE_TYPES = (tf.uint8, tf.int8, tf.int16, tf.int32, tf.int64, tf.float16, tf.bfloat16, tf.float32, tf.float64)
_ANY_TYPES = _REDUCE_TYPES + (tf.bool,)
# Moved, never computed on: uint16 travels as the int16 of the same bits.
_MOVED_TYPES = _ANY_TYPES + (tf.uint16,)


_last_op = weakref.WeakKeyDictionary()  # graph -> the last Chorus op created in it


def _in_order(make):
    """make() -> the new op's outputs (or the op), after the graph's previous Chorus op."""
    if tf.executing_eagerly():
        return make()
    graph = tf.compat.v1.get_default_graph()
    previous = _last_op.get(graph)
    if previous is None:
        out = make()
    else:
        with tf.control_dependencies([previous]):
            out = make()
    first = out[0] if isinstance(out, (list, tuple)) else out
    _last_op[graph] = first if isinstance(first, tf.Operation) else first.op
    return out


def _normalize(name):
    return re.sub("[^a-zA-Z0-9_.]", "_", name)


def _name_of(kind, name, tensor, ignore_name_scope=False):
    if name is not None:
        if not isinstance(name, str):
            raise TypeError(f"chorus: a collective's name must be a str, not {type(name).__name__}")
        return name
    if tf.executing_eagerly():
        return ""  # numbered by the op when it runs
    graph = tf.compat.v1.get_default_graph()
    base = f"{kind}.{_normalize(tensor.name)}"
    if ignore_name_scope:
        with graph.name_scope(None):
            return graph.unique_name(base)
    return graph.unique_name(base)


def _tensor(value, what):
    if isinstance(value, tf.IndexedSlices):
        raise TypeError(f"chorus: {what} takes dense tensors; an IndexedSlices goes through allreduce")
    try:
        return tf.convert_to_tensor(value)
    except (TypeError, ValueError) as e:
        raise TypeError(f"chorus: {what} takes a tf.Tensor or tf.Variable (or what converts to one), "
                        f"not {type(value).__name__}: {e}") from e


def _check_types(what, tensors, allowed):
    for t in tensors:
        if t.dtype not in allowed:
            names = ", ".join(d.name for d in allowed)
            raise TypeError(f"chorus: {what} does not take {t.dtype.name} tensors ({names})")


def _carried(tensor):
    """What Chorus carries for `tensor`: uint16's bits as int16 (allgather,
    broadcast and alltoall only move bytes), anything else as it is."""
    return tf.bitcast(tensor, tf.int16) if tensor.dtype == tf.uint16 else tensor


def _as_given(out, tensor):
    """`out` back in `tensor`'s dtype (undoes _carried)."""
    return tf.bitcast(out, tf.uint16) if tensor.dtype == tf.uint16 else out


def _set(process_set):
    """The set's id, for this rank's collective: a set this rank is not in
    is refused here, on this rank alone (its members never wait for it),
    as Horovod's InvalidArgumentError; an unregistered one is a ValueError."""
    sid = set_id(process_set)
    if sid != 0 and not process_set.included():
        from ..basics import rank
        raise tf.errors.InvalidArgumentError(None, None, f"chorus: rank {rank()} is not a member of {process_set}, "
                                                         "so it cannot take part in its collectives")
    return sid


def _set_size(process_set):
    from ..basics import size
    return size() if process_set is None or set_id(process_set) == 0 else process_set.size()


# ---- allreduce ----

def _allreduce_op(tensors, op, prescale, postscale, names, process_set):
    out = _in_order(lambda: _ops.chorus_allreduce(tensors, names=names, reduce_op=O.c_code(op),
                                                  prescale=float(prescale), postscale=float(postscale),
                                                  process_set=_set(process_set)))
    return list(out)


def _scaled_float(value, what):
    try:
        return float(value)
    except (TypeError, ValueError) as e:
        raise TypeError(f"chorus: {what} must be a number, not {type(value).__name__}") from e


def allreduce(tensor, average=None, device_dense="", device_sparse="", compression=Compression.none, op=None,
              prescale_factor=1.0, postscale_factor=1.0, name=None, process_set=global_process_set,
              ignore_name_scope=False):
    """The reduction of `tensor` over the ranks of `process_set` (op: Average
    by default, as Horovod's; Sum, Min, Max, Product, Adasum). An
    IndexedSlices is allgathered (values and indices), as Horovod does."""
    op = O.resolve(op, average)
    if isinstance(tensor, tf.IndexedSlices):
        if prescale_factor != 1.0 or postscale_factor != 1.0:
            raise NotImplementedError("chorus: allreduce of an IndexedSlices takes no prescale_factor or "
                                      "postscale_factor (as Horovod's)")
        return _sparse_allreduce(tensor, op, name, process_set, ignore_name_scope)
    tensor = _tensor(tensor, "allreduce")
    _check_types("allreduce", [tensor], _REDUCE_TYPES)
    compressed, ctx = compression.compress(tensor)
    names = [_name_of("allreduce", name, tensor, ignore_name_scope)]
    reduced = _allreduce_op([compressed], op, _scaled_float(prescale_factor, "prescale_factor"),
                            _scaled_float(postscale_factor, "postscale_factor"), names, process_set)[0]
    return compression.decompress(reduced, ctx)


def _sparse_allreduce(slices, op, name, process_set, ignore_name_scope):
    if op not in (O.Sum, O.Average):
        raise NotImplementedError(f"chorus: allreduce of an IndexedSlices supports Sum and Average, not {O.NAMES[op]}")
    base = name if name is not None else None
    values = allgather(slices.values, name=None if base is None else base + ".values", process_set=process_set,
                       ignore_name_scope=ignore_name_scope)
    indices = allgather(slices.indices, name=None if base is None else base + ".indices", process_set=process_set,
                        ignore_name_scope=ignore_name_scope)
    if op == O.Average:
        values = values / tf.cast(_set_size(process_set), values.dtype)
    return tf.IndexedSlices(values, indices, dense_shape=slices.dense_shape)


def grouped_allreduce(tensors, average=None, device_dense="", device_sparse="", compression=Compression.none, op=None,
                      prescale_factor=1.0, postscale_factor=1.0, process_set=global_process_set, name=None,
                      ignore_name_scope=False):
    """allreduce of each tensor, negotiated and fused as one group."""
    op = O.resolve(op, average)
    tensors = list(tensors)
    if not tensors:
        return []
    if any(isinstance(t, tf.IndexedSlices) for t in tensors):
        return [allreduce(t, op=op, compression=compression, prescale_factor=prescale_factor,
                          postscale_factor=postscale_factor, process_set=process_set,
                          name=None if name is None else f"{name}.{i}")
                for i, t in enumerate(tensors)]
    dense = [_tensor(t, "grouped_allreduce") for t in tensors]
    _check_types("grouped_allreduce", dense, _REDUCE_TYPES)
    compressed = [compression.compress(t) for t in dense]
    names = [_name_of("grouped_allreduce", None if name is None else f"{name}.{i}", t, ignore_name_scope)
             for i, t in enumerate(dense)]
    reduced = _allreduce_op([c for c, _ in compressed], op, _scaled_float(prescale_factor, "prescale_factor"),
                            _scaled_float(postscale_factor, "postscale_factor"), names, process_set)
    return [compression.decompress(r, ctx) for r, (_, ctx) in zip(reduced, compressed)]


# ---- allgather, broadcast, alltoall, reducescatter ----

def _gathered_shape(out, tensor):
    if tensor.shape.rank is not None and tensor.shape.rank > 0:
        out.set_shape([None] + tensor.shape.as_list()[1:])
    return out


def allgather(tensor, name=None, ignore_name_scope=False, process_set=global_process_set):
    """Every rank's rows of `tensor`, concatenated along the first dimension
    in rank order (the first dimension may differ per rank)."""
    tensor = _tensor(tensor, "allgather")
    _check_types("allgather", [tensor], _MOVED_TYPES)
    names = [_name_of("allgather", name, tensor, ignore_name_scope)]
    out = _in_order(lambda: _ops.chorus_allgather([_carried(tensor)], names=names, process_set=_set(process_set)))[0]
    return _gathered_shape(_as_given(out, tensor), tensor)


def grouped_allgather(tensors, name=None, ignore_name_scope=False, process_set=global_process_set):
    dense = [_tensor(t, "grouped_allgather") for t in tensors]
    if not dense:
        return []
    _check_types("grouped_allgather", dense, _MOVED_TYPES)
    names = [_name_of("grouped_allgather", None if name is None else f"{name}.{i}", t, ignore_name_scope)
             for i, t in enumerate(dense)]
    out = _in_order(lambda: _ops.chorus_allgather([_carried(t) for t in dense], names=names,
                                                  process_set=_set(process_set)))
    return [_gathered_shape(_as_given(o, t), t) for o, t in zip(out, dense)]


def broadcast(tensor, root_rank, name=None, ignore_name_scope=False, process_set=global_process_set):
    """root_rank's `tensor` on every rank of `process_set` (root_rank is a global rank)."""
    tensor = _tensor(tensor, "broadcast")
    _check_types("broadcast", [tensor], _MOVED_TYPES)
    names = [_name_of("broadcast", name, tensor, ignore_name_scope)]
    out = _in_order(lambda: _ops.chorus_broadcast(_carried(tensor), names=names, root_rank=int(root_rank),
                                                  process_set=_set(process_set)))
    return _as_given(out, tensor)


def broadcast_(variables, root_rank, name=None, process_set=global_process_set):
    """Horovod's in-place broadcast: root_rank's value of each variable
    assigned to it on every rank of `process_set`; returns the variables'
    new values (eagerly, or as tensors that assign when run in a graph)."""
    variables = list(variables)
    for i, var in enumerate(variables):
        if not hasattr(var, "assign"):
            raise TypeError(f"chorus.broadcast_: item {i} is a {type(var).__name__}, not a variable")
    out = []
    for i, var in enumerate(variables):
        value = tf.convert_to_tensor(var.value if not isinstance(var, tf.Variable) and hasattr(var, "value") else var)
        given = None if name is None else (name if len(variables) == 1 else f"{name}.{i}")
        received = broadcast(value, root_rank, name=given, process_set=process_set)
        assigned = var.assign(received)
        if tf.executing_eagerly():
            out.append(tf.convert_to_tensor(received))
        else:
            with tf.control_dependencies([assigned]):
                out.append(tf.identity(received))
    return out


def alltoall(tensor, splits=None, name=None, ignore_name_scope=False, process_set=global_process_set):
    """Sends splits[j] rows of `tensor` to rank j (equal parts when splits is
    None). Returns the received rows in rank order and, when `splits` was
    given, also the rows received from each rank, as Horovod's:
    `received` without splits, `(received, received_splits)` with them."""
    tensor = _tensor(tensor, "alltoall")
    _check_types("alltoall", [tensor], _MOVED_TYPES)
    given = splits is not None
    splits = tf.cast(tf.convert_to_tensor(splits), tf.int64) if given else tf.zeros([0], dtype=tf.int64)
    names = [_name_of("alltoall", name, tensor, ignore_name_scope)]
    received, received_splits = _in_order(lambda: _ops.chorus_alltoall(_carried(tensor), splits, names=names,
                                                                        process_set=_set(process_set)))
    received = _gathered_shape(_as_given(received, tensor), tensor)
    return (received, received_splits) if given else received


def reducescatter(tensor, op=None, name=None, ignore_name_scope=False, process_set=global_process_set,
                  prescale_factor=1.0, postscale_factor=1.0):
    """This rank's block of rows of the reduction (Average by default, as
    Horovod's; Sum, Min, Max, Product)."""
    return grouped_reducescatter([tensor], op=op, name=name, ignore_name_scope=ignore_name_scope,
                                 process_set=process_set, prescale_factor=prescale_factor,
                                 postscale_factor=postscale_factor, _what="reducescatter")[0]


def grouped_reducescatter(tensors, op=None, name=None, ignore_name_scope=False, process_set=global_process_set,
                          prescale_factor=1.0, postscale_factor=1.0, _what="grouped_reducescatter"):
    op = O.resolve(op, None)
    if op == O.Adasum:
        raise NotImplementedError("chorus: reducescatter does not support Adasum")
    dense = [_tensor(t, _what) for t in tensors]
    if not dense:
        return []
    _check_types(_what, dense, _REDUCE_TYPES)
    names = [_name_of(_what, None if name is None else (name if len(dense) == 1 else f"{name}.{i}"), t,
                      ignore_name_scope) for i, t in enumerate(dense)]
    prescale = _scaled_float(prescale_factor, "prescale_factor")
    postscale = _scaled_float(postscale_factor, "postscale_factor")
    out = _in_order(lambda: _ops.chorus_reducescatter(dense, names=names, reduce_op=O.c_code(op), prescale=prescale,
                                                      postscale=postscale, process_set=_set(process_set)))
    return [_gathered_shape(o, t) for o, t in zip(out, dense)]


def barrier(process_set=global_process_set):
    """Blocks until every rank of `process_set` reached it (an op inside tf.function)."""
    return _in_order(lambda: _ops.chorus_barrier(process_set=_set(process_set)))


def join(device=""):
    """This rank is out of data: waits for every rank to join (meanwhile
    taking part in the others' allreduces with zeros) and returns the last
    rank that joined."""
    return _in_order(lambda: _ops.chorus_join(process_set=0))


# ---- gradients (Horovod's formulas; chorus.torch's autograd is the reference) ----

def _differentiable(op, what):
    reduce_op = [k for k, v in O._C_CODES.items() if v == op.get_attr("reduce_op")][0]
    if reduce_op not in (O.Sum, O.Average):
        raise InvalidArgumentError(f"chorus: {what} with {O.NAMES[reduce_op]} has no gradient; only Sum and "
                                   "Average are differentiable")
    return reduce_op


def _grad_names(op):
    names = [n.decode() if isinstance(n, bytes) else n for n in op.get_attr("names")]
    return [n + ".grad" if n else "" for n in names]


@tf.RegisterGradient("ChorusAllreduce")
def _allreduce_grad(op, *grads):
    reduce_op = _differentiable(op, "allreduce")
    return _in_order(lambda: _ops.chorus_allreduce(list(grads), names=_grad_names(op), reduce_op=O.c_code(reduce_op),
                                                   prescale=op.get_attr("prescale"), postscale=op.get_attr("postscale"),
                                                   process_set=op.get_attr("process_set")))


@tf.RegisterGradient("ChorusAllgather")
def _allgather_grad(op, *grads):
    set_id_ = op.get_attr("process_set")
    names = _grad_names(op)
    averaged = _in_order(lambda: _ops.chorus_allreduce(list(grads), names=names, reduce_op=O.c_code(O.Average),
                                                       prescale=1.0, postscale=1.0, process_set=set_id_))
    out = []
    for i, (x, g) in enumerate(zip(op.inputs, averaged)):
        rows = tf.reshape(tf.shape(x, out_type=tf.int64)[0], [1])
        row_names = [n + ".rows" if n else "" for n in names[i:i + 1]]
        all_rows = _in_order(lambda: _ops.chorus_allgather([rows], names=row_names, process_set=set_id_))[0]
        member = _member_rank(set_id_)
        offset = tf.reduce_sum(all_rows[:member])
        out.append(g[offset:offset + rows[0]])
    return out


def _member_rank(set_id_):
    from .._library import lib
    from ..handles import check
    return check(lib.chorus_process_set_rank(set_id_))


@tf.RegisterGradient("ChorusBroadcast")
def _broadcast_grad(op, grad):
    from ..basics import rank
    averaged = _in_order(lambda: _ops.chorus_allreduce([grad], names=_grad_names(op), reduce_op=O.c_code(O.Average),
                                                       prescale=1.0, postscale=1.0,
                                                       process_set=op.get_attr("process_set")))[0]
    return averaged if rank() == op.get_attr("root_rank") else averaged * 0


@tf.RegisterGradient("ChorusAlltoall")
def _alltoall_grad(op, grad, _received_splits_grad):
    x = op.inputs[0]
    back, _ = _in_order(lambda: _ops.chorus_alltoall(grad, op.outputs[1], names=_grad_names(op),
                                                     process_set=op.get_attr("process_set")))
    missing = tf.shape(x)[0] - tf.shape(back)[0]  # rows past the splits were not sent: zero gradient
    back = tf.concat([back, tf.zeros(tf.concat([[missing], tf.shape(x)[1:]], 0), back.dtype)], 0)
    return back, None


@tf.RegisterGradient("ChorusReducescatter")
def _reducescatter_grad(op, *grads):
    reduce_op = _differentiable(op, "reducescatter")
    set_id_ = op.get_attr("process_set")
    gathered = _in_order(lambda: _ops.chorus_allgather(list(grads), names=_grad_names(op), process_set=set_id_))
    from .._library import lib
    from ..handles import check
    scale = op.get_attr("prescale") * op.get_attr("postscale")
    if reduce_op == O.Sum:
        scale *= check(lib.chorus_process_set_size(set_id_))
    return [g if scale == 1 else g * tf.cast(scale, g.dtype) for g in gathered]


tf.no_gradient("ChorusBarrier")
tf.no_gradient("ChorusJoin")
