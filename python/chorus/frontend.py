"""The collectives on a framework's arrays, written once: a front end is
this class over an adapter that turns the framework's arrays into Buffers
and makes its outputs (arrays.py for NumPy and DLPack, torch/ for torch).

What one rank finds wrong with its own input (a wrong type, an unsupported
dtype or device) is refused through the negotiation (collectives.refuse), so
every rank's call of that name fails with the reason, instead of the other
ranks waiting for this one. A non-contiguous input is copied; an in-place
call on one writes the result back at completion."""
from . import collectives as C
from . import naming
from . import ops as O
from . import process_sets as P


class Refused(Exception):
    """An adapter's reason to refuse this rank's input (becomes a negotiated refusal)."""


class Frontend:
    def __init__(self, adapter, op_prefixed_names=False):
        self.a = adapter
        self.op_prefixed_names = op_prefixed_names

    def name_of(self, kind, name, process_set):
        """The collective's name: numbered when not given (naming.py). A given
        one, in a Horovod front end (chorus.torch), is prefixed with the
        operation as Horovod's are ("allreduce.<name>": timelines, errors);
        a name that has it already, or its grouped form's (a member of a
        grouped call: "grouped_allgather.x.0"), is kept, so every path of
        one call (with or without autograd) ends at the same name."""
        if self.op_prefixed_names and isinstance(name, str) and not name.startswith((kind + ".", f"grouped_{kind}.")):
            name = f"{kind}.{name}"
        return naming.auto_name(kind, name, process_set)

    # --- helpers -------------------------------------------------------------
    def _refused(self, kind, name, why, set_id):
        return C.refuse(kind, name, why, set_id)  # the core's message names the collective, the tensor, the rank

    def _inputs(self, kind, name, arrays, set_id, writable=False):
        """Buffers of `arrays`, or a refused handle (returned as second value)."""
        try:
            return [self.a.buffer(x, writable) for x in arrays], None
        except Refused as why:
            if isinstance(name, str):
                return None, self._refused(kind, name, str(why), set_id)
            return None, C.refuse_group(kind, name, str(why), set_id)

    # --- allreduce -------------------------------------------------------------
    def allreduce_async(self, tensor, op=O.Average, name=None, prescale_factor=1.0, postscale_factor=1.0,
                        process_set=None, inplace=False):
        # The hot path of training (every gradient, every step): kept short.
        if name is None or self.op_prefixed_names:
            name = self.name_of("allreduce", name, process_set)
        set_id = 0 if process_set is None or process_set is P.global_process_set else P.set_id(process_set)
        try:
            src, buf = self.a.buffer(tensor, inplace)
        except Refused as why:
            return self._refused(C.ALLREDUCE, name, str(why), set_id)
        if inplace:
            return C.allreduce(name, buf, buf, op, prescale_factor, postscale_factor, set_id, (tensor, src),
                               _same(src) if src is tensor else self._write_back(tensor, src))
        out, out_buf = self.a.empty_like(src)
        return C.allreduce(name, buf, out_buf, op, prescale_factor, postscale_factor, set_id, (tensor, src, out),
                           _same(out))

    def _write_back(self, original, contiguous):
        if contiguous is original:
            return lambda: original
        return lambda: self.a.copy_into(original, contiguous)

    def grouped_allreduce_async(self, tensors, op=O.Average, name=None, prescale_factor=1.0, postscale_factor=1.0,
                                process_set=None, inplace=False):
        tensors = list(tensors)
        base = self.name_of("grouped_allreduce", name, process_set)
        names = [f"{base}.{i}" for i in range(len(tensors))]
        set_id = P.set_id(process_set)
        if not tensors:
            raise ValueError("chorus.grouped_allreduce: no tensors given")
        got, refused = self._inputs(C.ALLREDUCE, names, tensors, set_id, writable=inplace)
        if refused:
            return refused
        srcs = [s for s, _ in got]
        bufs = [b for _, b in got]
        if inplace:
            outs, out_bufs = srcs, bufs
            backs = [self._write_back(t, s) for t, s in zip(tensors, srcs)]
            finish = lambda: [b() for b in backs]  # noqa: E731
        else:
            made = [self.a.empty_like(s) for s in srcs]
            outs, out_bufs = [o for o, _ in made], [b for _, b in made]
            finish = lambda: outs  # noqa: E731
        if any(b.device != -1 for b in bufs):  # the device ABI has no grouped call: members one by one
            return _Group([C.allreduce(n, b, o, op, float(prescale_factor), float(postscale_factor), set_id,
                                       None, lambda: None) for n, b, o in zip(names, bufs, out_bufs)],
                          (tensors, srcs, outs), finish, base)
        return C.grouped_allreduce(names, bufs, out_bufs, op, float(prescale_factor), float(postscale_factor), set_id,
                                   (tensors, srcs, outs), finish)

    # --- broadcast -------------------------------------------------------------
    def broadcast_async(self, tensor, root_rank, name=None, process_set=None, inplace=False):
        name = self.name_of("broadcast", name, process_set)
        set_id = P.set_id(process_set)
        got, refused = self._inputs(C.BROADCAST, name, [tensor], set_id, writable=inplace)
        if refused:
            return refused
        (src, buf), = got
        if inplace:
            return C.broadcast(name, buf, int(root_rank), set_id, (tensor, src), self._write_back(tensor, src))
        out, out_buf = self.a.copy_of(src)
        return C.broadcast(name, out_buf, int(root_rank), set_id, (tensor, out), lambda: out)

    # --- shaped: allgather, reducescatter, alltoall ------------------------------
    def allgather_async(self, tensor, name=None, process_set=None):
        name = self.name_of("allgather", name, process_set)
        set_id = P.set_id(process_set)
        got, refused = self._inputs(C.ALLGATHER, name, [tensor], set_id)
        if refused:
            return refused
        (src, buf), = got
        return C.allgather(name, buf, self.a.maker(src), set_id, (tensor, src), lambda out: out)

    def grouped_allgather_async(self, tensors, name=None, process_set=None):
        return self._grouped_shaped(C.ALLGATHER, "grouped_allgather", tensors, name, process_set,
                                    lambda ns, bufs, makers, set_id, keep, finish:
                                    C.grouped_allgather(ns, bufs, makers, set_id, keep, finish),
                                    lambda n, b, make, set_id: C.allgather(n, b, make, set_id, None, lambda o: o))

    def reducescatter_async(self, tensor, op=O.Average, name=None, process_set=None, prescale_factor=1.0,
                            postscale_factor=1.0):
        name = self.name_of("reducescatter", name, process_set)
        set_id = P.set_id(process_set)
        got, refused = self._inputs(C.REDUCESCATTER, name, [tensor], set_id)
        if refused:
            return refused
        (src, buf), = got
        return C.reducescatter(name, buf, op, float(prescale_factor), float(postscale_factor), self.a.maker(src),
                               set_id, (tensor, src), lambda out: out)

    def grouped_reducescatter_async(self, tensors, op=O.Average, name=None, process_set=None, prescale_factor=1.0,
                                    postscale_factor=1.0):
        pre, post = float(prescale_factor), float(postscale_factor)
        return self._grouped_shaped(C.REDUCESCATTER, "grouped_reducescatter", tensors, name, process_set,
                                    lambda ns, bufs, makers, set_id, keep, finish:
                                    C.grouped_reducescatter(ns, bufs, op, pre, post, makers, set_id, keep, finish),
                                    lambda n, b, make, set_id:
                                    C.reducescatter(n, b, op, pre, post, make, set_id, None, lambda o: o))

    def _grouped_shaped(self, kind, what, tensors, name, process_set, grouped, single):
        """A grouped call whose outputs the negotiation sizes: one grouped call
        on the host; device members one by one (the device ABI has no grouped call)."""
        tensors = list(tensors)
        if not tensors:
            raise ValueError(f"chorus.{what}: no tensors given")
        base = self.name_of(what, name, process_set)
        names = [f"{base}.{i}" for i in range(len(tensors))]
        set_id = P.set_id(process_set)
        got, refused = self._inputs(kind, names, tensors, set_id)
        if refused:
            return refused
        srcs, bufs = [s for s, _ in got], [b for _, b in got]
        makers = [self.a.maker(s) for s in srcs]
        if any(b.device != -1 for b in bufs):
            return _Group([single(n, b, m, set_id) for n, b, m in zip(names, bufs, makers)], (tensors, srcs), None,
                          base)
        return grouped(names, bufs, makers, set_id, (tensors, srcs), lambda outs: outs)

    def alltoall_async(self, tensor, splits=None, name=None, process_set=None):
        """The handle's result is (output, received_splits as the adapter's int array)."""
        name = self.name_of("alltoall", name, process_set)
        set_id = P.set_id(process_set)
        got, refused = self._inputs(C.ALLTOALL, name, [tensor], set_id)
        if refused:
            return refused
        (src, buf), = got
        split_list = None
        if splits is not None:
            try:
                split_list = self.a.int_list(splits)
            except Refused as why:
                return self._refused(C.ALLTOALL, name, f"splits: {why}", set_id)
        return C.alltoall(name, buf, split_list, self.a.maker(src), set_id, (tensor, src),
                          lambda out, received: (out, self.a.int_array(received)))


def _same(x):
    return lambda: x


class _Group:
    """Several handles completed as one (device members submitted one by one)."""

    def __init__(self, handles, keep, finish, name):
        self.handles, self._keep, self._finish, self.name = handles, keep, finish, name
        self._done, self._result = False, None

    def poll(self):
        return all(h.poll() for h in self.handles)

    def wait(self, timeout=None):
        if not self._done:
            results = [h.wait(timeout) for h in self.handles]
            self._result = self._finish() if self._finish else results
            self._done, self._keep = True, None
        return self._result

    synchronize = wait
