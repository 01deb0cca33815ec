"""Chorus on Spark (docs/clusters.md): `chorus.spark.run(fn)` runs `fn` as
one Chorus job over Spark's barrier execution mode, one rank per barrier
task, and returns every rank's result in rank order (horovod.spark.run's
call).

    import chorus.spark
    def train():
        import chorus.torch as hvd
        hvd.init()
        ...
        return hvd.rank(), accuracy
    results = chorus.spark.run(train, num_proc=2)

The tasks of one barrier stage start together or not at all. They agree on
rank 0's address through BarrierTaskContext.allGather, then meet over
Chorus's TCP rendezvous with a per-job secret made on the driver (no ssh,
no MPI). A rank's exception fails the call with that rank named; Spark
stops the stage's other tasks."""
import os
import secrets
import time
import traceback

from ._job_env import free_port, job_env, shutdown_chorus
from .errors import AbortedError, ChorusError

_FAILED = "chorus.spark.run: rank "
# A rank whose collective was aborted by another rank's failure waits this
# long before failing its task: Spark reports a barrier stage's first failed
# task, and it should be the rank that failed first, not the ones it stopped.
# Spark kills the waiting tasks as soon as that first failure aborts the stage.
_SECONDARY_FAILURE_DELAY_SECONDS = 10.0


def _task(fn, args, kwargs, secret, extra_env):
    def run_partition(_):
        from pyspark import BarrierTaskContext
        context = BarrierTaskContext.get()
        rank = context.partitionId()
        host = context.getTaskInfos()[rank].address.rsplit(":", 1)[0]
        # Every rank tells its host; rank 0 also a port it found free there.
        told = context.allGather(f"{host} {free_port() if rank == 0 else 0}")
        hosts = [t.split()[0] for t in told]
        master = (hosts[0], int(told[0].split()[1]))
        shutdown_chorus()  # a failed job before may have left its runtime in this reused Python worker
        saved = dict(os.environ)
        os.environ.update(job_env(rank, hosts, master, secret, extra_env))
        try:
            result = fn(*args, **kwargs)
        except BaseException as e:  # noqa: BLE001 (named, then raised: Spark fails the stage)
            # No shutdown here: the others must not fail first (on this rank's
            # shutdown), or Spark would report their failure, not this one's.
            # Spark stops them once this task failed.
            if isinstance(e, AbortedError):
                time.sleep(_SECONDARY_FAILURE_DELAY_SECONDS)  # the failure that caused this one goes first
            raise RuntimeError(f"{_FAILED}{rank} failed: {type(e).__name__}: {e}\n{traceback.format_exc()}") from e
        finally:
            os.environ.clear()
            os.environ.update(saved)
        shutdown_chorus()  # Spark may reuse this Python worker for another job
        yield rank, result
    return run_partition


def run(fn, args=(), kwargs=None, num_proc=None, env=None, spark_context=None):
    """Runs fn(*args, **kwargs) on `num_proc` barrier tasks (default: the
    context's default parallelism), each one rank of a Chorus job; returns
    the ranks' results in rank order. `env`: more environment variables
    for every rank (CHORUS_* knobs). A rank's exception raises ChorusError
    naming the rank and carrying its traceback."""
    from pyspark import SparkContext
    sc = spark_context or SparkContext.getOrCreate()
    n = sc.defaultParallelism if num_proc is None else int(num_proc)
    if n < 1:
        raise ValueError(f"chorus.spark.run: num_proc must be >= 1, not {n}")
    task = _task(fn, tuple(args), dict(kwargs or {}), secrets.token_hex(16), env)
    try:
        results = sc.parallelize(range(n), n).barrier().mapPartitions(task).collect()
    except Exception as e:  # noqa: BLE001 (py4j's error carries the rank's message)
        text = str(e)
        if _FAILED not in text:
            raise
        message = text[text.index(_FAILED):].split("\n\tat ")[0]  # the rank's words, not the Java stack
        raise ChorusError(message.strip()[:4000]) from e
    return [result for _, result in sorted(results, key=lambda item: item[0])]
