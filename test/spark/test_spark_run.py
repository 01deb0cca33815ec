"""chorus.spark.run over Spark's barrier execution mode, on a local Spark
(local[3]: each barrier task its own Python worker process): every rank's
result in rank order, a real allreduce between the ranks, and a rank's
exception failing the call naming that rank. One Spark for the module."""
import os
import sys

import pytest

pytest.importorskip("pyspark")

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
# Spark's Python workers import this module (the functions below are pickled by reference) and chorus.
paths = [HERE] + ([os.path.join(ROOT, "python")] if os.environ.get("CHORUS_TEST_INSTALLED") != "1" else [])
sys.path[:0] = paths
os.environ["PYTHONPATH"] = os.pathsep.join(paths + [os.environ.get("PYTHONPATH", "")])

import chorus.spark  # noqa: E402
from chorus.errors import ChorusError  # noqa: E402


@pytest.fixture(scope="module")
def spark():
    from pyspark import SparkConf, SparkContext
    os.environ["PYSPARK_PYTHON"] = sys.executable
    conf = SparkConf().setMaster("local[3]").setAppName("chorus-test").set("spark.ui.enabled", "false")
    sc = SparkContext.getOrCreate(conf)
    sc.setLogLevel("ERROR")
    yield sc
    sc.stop()


def _allreduce_rank():
    import numpy as np
    import chorus
    chorus.init()
    total = chorus.allreduce(np.array([chorus.rank() + 1.0]), op=chorus.Sum)
    return chorus.rank(), chorus.size(), chorus.local_size(), float(total[0]), os.environ["CHORUS_SECRET"] != ""


@pytest.mark.parametrize("n", [2, 3])
def test_run_returns_each_ranks_result_in_rank_order(spark, n):
    results = chorus.spark.run(_allreduce_rank, num_proc=n, spark_context=spark)
    assert [r[0] for r in results] == list(range(n))
    for rank, size, local_size, total, has_secret in results:
        assert size == n and local_size == n and total == n * (n + 1) / 2 and has_secret


def _fails_on_rank_one(message):
    import chorus
    chorus.init()
    if chorus.rank() == 1:
        raise ValueError(message)
    chorus.barrier()  # the others wait for rank 1: Spark must stop them
    return chorus.rank()


def test_a_ranks_exception_fails_the_call_naming_the_rank(spark):
    with pytest.raises(ChorusError, match=r"rank 1 failed: ValueError: bad input on purpose"):
        chorus.spark.run(_fails_on_rank_one, args=("bad input on purpose",), num_proc=2, spark_context=spark)
    # and the context is still good for the next job
    assert [r[0] for r in chorus.spark.run(_allreduce_rank, num_proc=2, spark_context=spark)] == [0, 1]


def test_bad_num_proc(spark):
    with pytest.raises(ValueError, match="num_proc"):
        chorus.spark.run(_allreduce_rank, num_proc=0, spark_context=spark)
