"""The driver's side of a call on every rank: results in rank order, or
one error naming the rank whose failure came first."""
import re

from ..errors import AbortedError, ChorusError

_TERMINAL_COLOURS = re.compile(r"\x1b\[[0-9;]*m")  # Ray colours its task errors' text

# After a rank failed only because another's failure aborted its collective,
# the driver waits this long for the failure that caused it (a lost actor's
# death reaches the driver after its peers' AbortedError, at times).
CAUSE_WAIT_SECONDS = 5.0


class WorkerFailure(ChorusError):
    """A worker of a chorus.ray job raised or was lost: `rank` names it
    (RayExecutor), or `member` (ElasticRayExecutor, whose ranks change)."""

    def __init__(self, message, rank=None, member=None):
        super().__init__(message)
        self.rank, self.member = rank, member


def _cause(error):
    return getattr(error, "cause", None) or error


def aborted_by_another(error):
    return isinstance(_cause(error), AbortedError)


def describe_error(error):
    """A worker's exception, from the Ray task error around it: its type,
    its words and its traceback."""
    cause = _cause(error)
    text = f"{type(cause).__name__}: {cause}"
    if cause is not error:
        text += f"\n{error}"  # Ray's text of a task error carries the rank's traceback
    return _TERMINAL_COLOURS.sub("", text)[:8000]


def _describe(rank, error):
    import ray
    if isinstance(error, ray.exceptions.RayActorError):
        return f"chorus.ray: rank {rank} was lost: its Ray actor ended ({str(error).splitlines()[0]})"
    return f"chorus.ray: rank {rank} failed: {describe_error(error)}"


def gather(refs, timeout=None, what="the call"):
    """Every rank's result, in rank order (refs[i]: rank i's call), or
    WorkerFailure for the first rank that failed not because of another;
    ChorusError when `timeout` seconds pass first, naming the ranks still
    out and `what` they were doing."""
    import time

    import ray
    deadline = None if timeout is None else time.monotonic() + timeout
    rank_of = {ref: rank for rank, ref in enumerate(refs)}
    results, failures = [None] * len(refs), []

    def collect(done):
        for ref in done:
            rank = rank_of.pop(ref)
            try:
                results[rank] = ray.get(ref)
            except Exception as e:  # noqa: BLE001 (every rank's failure is weighed below)
                failures.append((rank, e))

    while rank_of and not failures:
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            raise ChorusError(f"chorus.ray: rank{'s' if len(rank_of) > 1 else ''} "
                              f"{', '.join(str(r) for r in sorted(rank_of.values()))} did not finish {what} "
                              f"within {timeout:g} s")
        collect(ray.wait(list(rank_of), num_returns=1, timeout=left)[0])
    if failures and rank_of and all(aborted_by_another(e) for _, e in failures):
        collect(ray.wait(list(rank_of), num_returns=len(rank_of), timeout=CAUSE_WAIT_SECONDS)[0])
    if failures:
        rank, error = next(((r, e) for r, e in failures if not aborted_by_another(e)), failures[0])
        raise WorkerFailure(_describe(rank, error), rank) from error
    return results
