"""The collectives over Buffers: each call submits through the C ABI and
returns a Handle. Framework-neutral: the NumPy/DLPack front end (arrays.py)
and chorus.torch make Buffers and outputs and call these.

`make_output(shape) -> (object, pointer)` makes an output whose shape only
the negotiation tells; the handle's result is that object (finish may turn
it into something else)."""
import ctypes

from . import buffers as B
from .ops import _C_CODES as _C_OPS, c_code
from ._library import fast as _fast, lib
from .handles import ALLOCATE, Allocator, FailedHandle, Handle, check

# chorus_collective (c_api.h)
ALLREDUCE, BROADCAST, ALLGATHER, REDUCESCATTER, ALLTOALL = range(5)


_allreduce_shaped = lib.chorus_allreduce_shaped_async


def _shape_array(shape):
    # A scalar has no dimensions; the ABI's shaped calls refuse it on every rank.
    return (ctypes.c_int64 * max(1, len(shape)))(*shape), len(shape)


def _stream(buf):
    return ctypes.c_void_p(buf.stream or None)


def _submit(fn, args, keep, finish, name):
    h = ctypes.c_int64(0)
    check(fn(*args, ctypes.byref(h)))
    return Handle([h.value], keep, finish, name)


_shapes = {}  # shape tuple -> its int64_t array (training repeats a few shapes forever)


def _shape_of(shape):
    c = _shapes.get(shape)
    if c is None:
        if len(_shapes) > 4096:
            _shapes.clear()
        c = _shapes[shape] = (ctypes.c_int64 * max(1, len(shape)))(*shape)
    return c


def allreduce(name, inp, out, op, prescale, postscale, set_id, keep, finish):
    """The ranks agree on the whole shape, not only the count (a (6,) against a (2, 3) fails)."""
    if _fast is not None:
        rc = _fast.allreduce(set_id, name.encode(), inp.ptr, out.ptr, inp.shape, inp.dtype, _C_OPS[op], prescale,
                             postscale, inp.device, inp.stream)
        if rc < 0:
            check(rc)
        return Handle((rc,), keep, finish, name)
    h = (ctypes.c_int64 * 1)()
    rc = _allreduce_shaped(set_id, name.encode(), inp.ptr, out.ptr, _shape_of(inp.shape), len(inp.shape), inp.dtype,
                           _C_OPS[op], prescale, postscale, inp.device, inp.stream, h)
    if rc < 0:
        check(rc)
    return Handle((h[0],), keep, finish, name)


def broadcast(name, buf, root, set_id, keep, finish):
    count = B.numel(buf.shape)
    n = name.encode()
    if buf.device == B.HOST:
        return _submit(lib.chorus_broadcast_async_in_set, (set_id, n, buf.ptr, count, buf.dtype, root), keep, finish,
                       name)
    return _submit(lib.chorus_broadcast_async_on_device,
                   (set_id, n, buf.ptr, count, buf.dtype, root, buf.device, _stream(buf)), keep, finish, name)


def _with_output(make_output, finish):
    alloc = Allocator(make_output)

    def done():
        alloc.release()
        return finish(alloc.output)
    return alloc, done


def allgather(name, inp, make_output, set_id, keep, finish):
    alloc, done = _with_output(make_output, finish)
    shape, ndim = _shape_array(inp.shape)
    n = name.encode()
    try:
        if inp.device == B.HOST:
            args = (set_id, n, inp.ptr, shape, ndim, inp.dtype, ALLOCATE, alloc.key)
            return _submit(lib.chorus_allgather_async_in_set, args, (keep, alloc), done, name)
        args = (set_id, n, inp.ptr, shape, ndim, inp.dtype, inp.device, _stream(inp), ALLOCATE, alloc.key)
        return _submit(lib.chorus_allgather_async_on_device, args, (keep, alloc), done, name)
    except BaseException:
        alloc.release()
        raise


def reducescatter(name, inp, op, prescale, postscale, make_output, set_id, keep, finish):
    alloc, done = _with_output(make_output, finish)
    shape, ndim = _shape_array(inp.shape)
    n = name.encode()
    try:
        if inp.device == B.HOST:
            args = (set_id, n, inp.ptr, shape, ndim, inp.dtype, c_code(op), prescale, postscale, ALLOCATE, alloc.key)
            return _submit(lib.chorus_reducescatter_async_in_set, args, (keep, alloc), done, name)
        args = (set_id, n, inp.ptr, shape, ndim, inp.dtype, c_code(op), prescale, postscale, inp.device, _stream(inp),
                ALLOCATE, alloc.key)
        return _submit(lib.chorus_reducescatter_async_on_device, args, (keep, alloc), done, name)
    except BaseException:
        alloc.release()
        raise


def alltoall(name, inp, splits, make_output, set_id, keep, finish):
    """finish(output, received_splits) makes the result."""
    shape, ndim = _shape_array(inp.shape)
    n = name.encode()
    nsplits = len(splits) if splits is not None else 0
    c_splits = (ctypes.c_int64 * max(1, nsplits))(*(splits or ()))
    alloc = Allocator(make_output)
    received = []

    def read_splits(handle_id):  # between completion and release (c_api.h: chorus_received_splits)
        room = check(lib.chorus_size()) + 1
        got = (ctypes.c_int64 * room)()
        received.extend(got[i] for i in range(check(lib.chorus_received_splits(handle_id, got, room))))

    def done():
        alloc.release()
        return finish(alloc.output, received)
    given = c_splits if splits is not None else None
    try:
        if inp.device == B.HOST:
            args = (set_id, n, inp.ptr, shape, ndim, inp.dtype, given, nsplits, ALLOCATE, alloc.key)
            fn = lib.chorus_alltoall_async_in_set
        else:
            args = (set_id, n, inp.ptr, shape, ndim, inp.dtype, given, nsplits, inp.device, _stream(inp), ALLOCATE,
                    alloc.key)
            fn = lib.chorus_alltoall_async_on_device
        h = ctypes.c_int64(0)
        check(fn(*args, ctypes.byref(h)))
    except BaseException:
        alloc.release()
        raise
    return Handle([h.value], (keep, alloc, c_splits), done, name, peek=read_splits)


def grouped_allreduce(names, inps, outs, op, prescale, postscale, set_id, keep, finish):
    count = len(names)
    shapes = [_shape_array(b.shape) for b in inps]
    c_names = (ctypes.c_char_p * count)(*(n.encode() for n in names))
    c_in = (ctypes.c_void_p * count)(*(b.ptr for b in inps))
    c_out = (ctypes.c_void_p * count)(*(b.ptr for b in outs))
    c_shapes = (ctypes.POINTER(ctypes.c_int64) * count)(*(ctypes.cast(s, ctypes.POINTER(ctypes.c_int64))
                                                          for s, _ in shapes))
    c_ndims = (ctypes.c_int * count)(*(nd for _, nd in shapes))
    c_dtypes = (ctypes.c_int * count)(*(b.dtype for b in inps))
    ids = (ctypes.c_int64 * count)()
    check(lib.chorus_grouped_allreduce_async(set_id, count, c_names, c_in, c_out, c_shapes, c_ndims, c_dtypes,
                                             c_code(op), prescale, postscale, ids))
    return Handle(list(ids), keep, finish, names[0])


def _grouped_shaped(fn, names, inps, make_outputs, extra, set_id, keep, finish):
    count = len(names)
    allocs = [Allocator(m) for m in make_outputs]
    shapes = [_shape_array(b.shape) for b in inps]
    c_names = (ctypes.c_char_p * count)(*(n.encode() for n in names))
    c_in = (ctypes.c_void_p * count)(*(b.ptr for b in inps))
    c_shapes = (ctypes.POINTER(ctypes.c_int64) * count)(*(ctypes.cast(s, ctypes.POINTER(ctypes.c_int64))
                                                          for s, _ in shapes))
    c_ndims = (ctypes.c_int * count)(*(nd for _, nd in shapes))
    c_dtypes = (ctypes.c_int * count)(*(b.dtype for b in inps))
    c_users = (ctypes.c_void_p * count)(*(a.key for a in allocs))
    ids = (ctypes.c_int64 * count)()

    def done():
        for a in allocs:
            a.release()
        return finish([a.output for a in allocs])
    try:
        check(fn(set_id, count, c_names, c_in, c_shapes, c_ndims, c_dtypes, *extra, ALLOCATE, c_users, ids))
    except BaseException:
        for a in allocs:
            a.release()
        raise
    return Handle(list(ids), (keep, allocs, shapes), done, names[0])


def grouped_allgather(names, inps, make_outputs, set_id, keep, finish):
    return _grouped_shaped(lib.chorus_grouped_allgather_async, names, inps, make_outputs, (), set_id, keep, finish)


def grouped_reducescatter(names, inps, op, prescale, postscale, make_outputs, set_id, keep, finish):
    return _grouped_shaped(lib.chorus_grouped_reducescatter_async, names, inps, make_outputs,
                           (c_code(op), prescale, postscale), set_id, keep, finish)


def refuse(kind, name, why, set_id):
    """This rank's own refusal of its call `name`, negotiated: every rank's
    call of that name fails, naming this rank and `why`."""
    return _submit(lib.chorus_refuse_async, (set_id, kind, name.encode(), why.encode()), None, lambda: None, name)


def refuse_group(kind, names, why, set_id):
    count = len(names)
    c_names = (ctypes.c_char_p * count)(*(n.encode() for n in names))
    ids = (ctypes.c_int64 * count)()
    check(lib.chorus_refuse_group_async(set_id, kind, count, c_names, why.encode(), ids))
    return Handle(list(ids), None, lambda: None, names[0])


def failed(error, name):
    return FailedHandle(error, name)
