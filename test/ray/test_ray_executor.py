"""chorus.ray.RayExecutor on a local Ray of 4 CPUs (one Ray for the
module): results in rank order with a real allreduce at 2 and 3 workers,
executables, a rank raising, a rank lost mid-job, and bad arguments."""
import time

import pytest

pytest.importorskip("ray")

import rank_functions as fns  # noqa: E402
from chorus.errors import ChorusError  # noqa: E402
from chorus.ray import RayExecutor, WorkerFailure  # noqa: E402

RAY_CPUS = 4  # one local Ray for the module (conftest.py)


@pytest.fixture
def executor_of():
    made = []

    def make(*args, **kwargs):
        made.append(RayExecutor(*args, **kwargs))
        return made[-1]
    yield make
    for executor in made:
        executor.shutdown()


@pytest.mark.parametrize("n", [2, 3])
def test_run_returns_each_ranks_result_in_rank_order(executor_of, n):
    executor = executor_of(RayExecutor.create_settings(timeout_s=60), num_workers=n)
    executor.start()
    results = executor.run(fns.allreduce_rank)
    assert [r["rank"] for r in results] == list(range(n))
    for r in results:
        assert r["size"] == n and r["local_size"] == n and r["sum"] == n * (n + 1) / 2 and r["secret"]
    assert sorted(r["local_rank"] for r in results) == list(range(n))
    assert executor.run(fns.allreduce_rank) == results  # the job goes on across calls


def test_executables_and_execute_single(executor_of):
    executor = executor_of(num_workers=2)
    executor.start(executable_cls=fns.Counter, executable_args=[10])
    assert executor.execute(fns.counter_value) == [10, 11]
    assert executor.execute_single(fns.counter_value) == 10


def test_a_rank_that_raises_fails_run_naming_it(executor_of):
    executor = executor_of(num_workers=3)
    executor.start()
    with pytest.raises(WorkerFailure, match=r"rank 1 failed: ValueError: bad input on purpose") as failure:
        executor.run(fns.fails_on_rank_one, args=["bad input on purpose"])
    assert failure.value.rank == 1 and "in fails_on_rank_one" in str(failure.value)  # its traceback
    with pytest.raises(ChorusError, match=r"no workers \(call start\(\)"):
        executor.run(fns.allreduce_rank)
    executor.start()  # new workers, a new job
    assert [r["sum"] for r in executor.run(fns.allreduce_rank)] == [6.0] * 3


def test_a_lost_rank_fails_run_within_seconds(executor_of):
    executor = executor_of(num_workers=2)
    executor.start()
    began = time.monotonic()
    with pytest.raises(WorkerFailure, match=r"rank 1 was lost: its Ray actor ended") as failure:
        executor.run(fns.lost_on_rank_one)
    assert failure.value.rank == 1
    assert time.monotonic() - began < 15


def test_bad_arguments():
    with pytest.raises(ValueError, match=r"num_workers must be >= 1, not 0"):
        RayExecutor(num_workers=0)
    with pytest.raises(ValueError, match=r"num_workers, or num_hosts .* not both"):
        RayExecutor(num_workers=2, num_hosts=2)
    with pytest.raises(ValueError, match=r"gpus_per_worker=1 needs use_gpu=True"):
        RayExecutor(num_workers=2, gpus_per_worker=1)
    with pytest.raises(ChorusError, match=r"no workers"):
        RayExecutor(num_workers=2).run(fns.allreduce_rank)
    with pytest.raises(ValueError, match=r"callbacks .* not supported"):
        RayExecutor(num_workers=1).run(fns.allreduce_rank, callbacks=[print])
    with pytest.raises(ValueError, match=r"elastic job .*ElasticRayExecutor"):
        RayExecutor(num_workers=2, min_workers=1, max_workers=4)


def test_more_workers_than_the_cluster_has_fail_naming_both(executor_of):
    executor = executor_of(RayExecutor.create_settings(placement_group_timeout_s=2), num_workers=9)
    began = time.monotonic()
    with pytest.raises(ChorusError, match=r"9 workers of 1 CPU could not be placed within 2 s .* has 4 CPUs"):
        executor.start()
    assert time.monotonic() - began < 10
