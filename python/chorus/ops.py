"""Reduction operations with Horovod's values (hvd.Average == 0, hvd.Sum == 1,
...), turned into the C ABI's chorus_reduce_op where a call is made."""
import warnings

Average, Sum, Adasum, Min, Max, Product = range(6)
NAMES = {Average: "Average", Sum: "Sum", Adasum: "Adasum", Min: "Min", Max: "Max", Product: "Product"}
_C_CODES = {Sum: 0, Average: 1, Min: 2, Max: 3, Product: 4, Adasum: 5}  # c_api.h chorus_reduce_op


def resolve(op, average=None, default=Average):
    """The op from Horovod's (op, average) pair: `average` is the deprecated
    boolean; both at once is a ValueError, as in Horovod."""
    if average is None and op in NAMES:
        return op
    if op is not None and average is not None:
        raise ValueError("chorus: the op parameter supersedes average; give only one of them")
    if average is not None:
        warnings.warn("chorus: the average argument is deprecated, as in Horovod; use op=Average or op=Sum",
                      DeprecationWarning, stacklevel=3)
        return Average if average else Sum
    if op is None:
        return default
    if op not in NAMES:
        raise ValueError(f"chorus: unknown reduce op {op!r} (chorus.Average, Sum, Adasum, Min, Max, Product)")
    return op


def c_code(op):
    return _C_CODES[op]
