"""The public collective functions with Horovod's signatures, made once over
a front end (NumPy's in chorus, torch's in chorus.torch)."""
from . import ops as O
from .handles import check
from ._library import lib
from .process_sets import global_process_set, set_id


def collective_functions(front):
    """Horovod's collective calls over `front`: a dict of name -> function."""

    def allreduce_async(tensor, average=None, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0,
                        process_set=global_process_set):
        return front.allreduce_async(tensor, O.resolve(op, average), name, float(prescale_factor),
                                     float(postscale_factor), process_set)

    def allreduce(tensor, average=None, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0,
                  process_set=global_process_set):
        return allreduce_async(tensor, average, name, op, prescale_factor, postscale_factor, process_set).wait()

    def allreduce_async_(tensor, average=None, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0,
                         process_set=global_process_set):
        return front.allreduce_async(tensor, O.resolve(op, average), name, float(prescale_factor),
                                     float(postscale_factor), process_set, True)

    def allreduce_(tensor, average=None, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0,
                   process_set=global_process_set):
        return allreduce_async_(tensor, average, name, op, prescale_factor, postscale_factor, process_set).wait()

    def grouped_allreduce_async(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                                postscale_factor=1.0, process_set=global_process_set):
        return front.grouped_allreduce_async(tensors, O.resolve(op, average), name, prescale_factor,
                                             postscale_factor, process_set)

    def grouped_allreduce(tensors, average=None, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0,
                          process_set=global_process_set):
        return grouped_allreduce_async(tensors, average, name, op, prescale_factor, postscale_factor,
                                       process_set).wait()

    def grouped_allreduce_async_(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                                 postscale_factor=1.0, process_set=global_process_set):
        return front.grouped_allreduce_async(tensors, O.resolve(op, average), name, prescale_factor,
                                             postscale_factor, process_set, inplace=True)

    def grouped_allreduce_(tensors, average=None, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0,
                           process_set=global_process_set):
        return grouped_allreduce_async_(tensors, average, name, op, prescale_factor, postscale_factor,
                                        process_set).wait()

    def allgather_async(tensor, name=None, process_set=global_process_set):
        return front.allgather_async(tensor, name, process_set)

    def allgather(tensor, name=None, process_set=global_process_set):
        return allgather_async(tensor, name, process_set).wait()

    def grouped_allgather_async(tensors, name=None, process_set=global_process_set):
        return front.grouped_allgather_async(tensors, name, process_set)

    def grouped_allgather(tensors, name=None, process_set=global_process_set):
        return grouped_allgather_async(tensors, name, process_set).wait()

    def broadcast_async(tensor, root_rank, name=None, process_set=global_process_set):
        return front.broadcast_async(tensor, root_rank, name, process_set)

    def broadcast(tensor, root_rank, name=None, process_set=global_process_set):
        return broadcast_async(tensor, root_rank, name, process_set).wait()

    def broadcast_async_(tensor, root_rank, name=None, process_set=global_process_set):
        return front.broadcast_async(tensor, root_rank, name, process_set, inplace=True)

    def broadcast_(tensor, root_rank, name=None, process_set=global_process_set):
        return broadcast_async_(tensor, root_rank, name, process_set).wait()

    def alltoall_async(tensor, splits=None, name=None, process_set=global_process_set):
        """The handle's result: (output, received_splits), as Horovod's synchronize gives."""
        return front.alltoall_async(tensor, splits, name, process_set)

    def alltoall(tensor, splits=None, name=None, process_set=global_process_set):
        """The received rows in rank order; with `splits`, (output, received_splits) as Horovod."""
        output, received = alltoall_async(tensor, splits, name, process_set).wait()
        return (output, received) if splits is not None else output

    def reducescatter_async(tensor, name=None, op=O.Average, process_set=global_process_set, prescale_factor=1.0,
                            postscale_factor=1.0):
        return front.reducescatter_async(tensor, O.resolve(op), name, process_set, prescale_factor, postscale_factor)

    def reducescatter(tensor, name=None, op=O.Average, process_set=global_process_set, prescale_factor=1.0,
                      postscale_factor=1.0):
        return reducescatter_async(tensor, name, op, process_set, prescale_factor, postscale_factor).wait()

    def grouped_reducescatter_async(tensors, name=None, op=O.Average, process_set=global_process_set,
                                    prescale_factor=1.0, postscale_factor=1.0):
        return front.grouped_reducescatter_async(tensors, O.resolve(op), name, process_set, prescale_factor,
                                                 postscale_factor)

    def grouped_reducescatter(tensors, name=None, op=O.Average, process_set=global_process_set,
                              prescale_factor=1.0, postscale_factor=1.0):
        return grouped_reducescatter_async(tensors, name, op, process_set, prescale_factor, postscale_factor).wait()

    return {f.__name__: f for f in (
        allreduce_async, allreduce, allreduce_async_, allreduce_, grouped_allreduce_async, grouped_allreduce,
        grouped_allreduce_async_, grouped_allreduce_, allgather_async, allgather, grouped_allgather_async,
        grouped_allgather, broadcast_async, broadcast, broadcast_async_, broadcast_, alltoall_async, alltoall,
        reducescatter_async, reducescatter, grouped_reducescatter_async, grouped_reducescatter)}


def poll(handle):
    """True once the operation of `handle` completed."""
    return handle.poll()


def synchronize(handle, timeout=None):
    """Waits for `handle` and returns its result (raises its error)."""
    return handle.wait(timeout)


def barrier(process_set=global_process_set):
    """Blocks until every rank of `process_set` called barrier."""
    check(lib.chorus_barrier_in_set(set_id(process_set)))


def join(device=-1):
    """This rank is out of data: blocks until every rank joined, meanwhile
    taking part in the others' allreduces with zeros. Returns the rank that
    joined last. (`device` is Horovod's and not needed.)"""
    return check(lib.chorus_join())


def start_timeline(file_path, mark_cycles=False):
    """Starts writing this rank's Chrome-trace timeline to `file_path` (rank r > 0: file_path.rank<r>)."""
    check(lib.chorus_start_timeline(str(file_path).encode(), 1 if mark_cycles else 0))


def stop_timeline():
    """Ends the timeline file; True when one was running."""
    return check(lib.chorus_stop_timeline()) == 1
