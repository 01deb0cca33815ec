"""The framework-agnostic core on NumPy arrays (and DLPack): values at 1-4
ranks for every collective, op and dtype, async handles, process sets, join,
and errors that reach every rank."""
import time

import numpy as np
import pytest

import chorus

DTYPES = [np.uint8, np.int8, np.int16, np.int32, np.int64, np.float16, np.float32, np.float64]
REDUCE_DTYPES = [np.int32, np.int64, np.float16, np.float32, np.float64]


def rank_values(shape, dtype, r):
    """Small integers in `dtype`: exact in every order of any reduction."""
    return ((np.arange(int(np.prod(shape))) % 5) + r + 1).astype(dtype).reshape(shape)


@pytest.mark.parametrize("dtype", REDUCE_DTYPES)
@pytest.mark.parametrize("shape", [(17,), (5, 3), (2, 3, 4), (0,)])
def test_allreduce_ops(dtype, shape):
    n, r = chorus.size(), chorus.rank()
    everyone = np.stack([rank_values(shape, dtype, k) for k in range(n)])
    x = rank_values(shape, dtype, r)
    assert np.array_equal(chorus.allreduce(x, op=chorus.Sum), everyone.sum(0).astype(dtype))
    assert np.array_equal(chorus.allreduce(x, op=chorus.Min), everyone.min(0))
    assert np.array_equal(chorus.allreduce(x, op=chorus.Max), everyone.max(0))
    if dtype in (np.float32, np.float64):
        assert np.allclose(chorus.allreduce(x), everyone.mean(0))                 # Average is the default
        assert np.allclose(chorus.allreduce(x, op=chorus.Product), everyone.prod(0))
        assert np.allclose(chorus.allreduce(x, op=chorus.Sum, prescale_factor=0.5, postscale_factor=3.0),
                           everyone.sum(0) * 1.5)
    assert np.array_equal(x, rank_values(shape, dtype, r))  # out of place: the input is untouched


def test_allreduce_in_place_and_deprecated_average():
    x = np.full(8, chorus.rank() + 1.0, dtype=np.float32)
    assert chorus.allreduce_(x, average=False) is x
    n = chorus.size()
    assert np.all(x == n * (n + 1) / 2)
    with pytest.raises(ValueError, match="supersedes"):
        chorus.allreduce(x, average=True, op=chorus.Sum)


def test_non_contiguous_input_and_in_place_write_back():
    base = np.arange(24, dtype=np.float64).reshape(4, 6) + chorus.rank()
    view = base[:, ::2]
    assert not view.flags.c_contiguous
    expected = sum(np.arange(24, dtype=np.float64).reshape(4, 6)[:, ::2] + k for k in range(chorus.size()))
    assert np.array_equal(chorus.allreduce(view, op=chorus.Sum), expected)
    chorus.allreduce_(view, op=chorus.Sum)
    assert np.array_equal(base[:, ::2], expected)


@pytest.mark.parametrize("dtype", DTYPES + [np.bool_])
def test_allgather_rows_differ_per_rank(dtype):
    r, n = chorus.rank(), chorus.size()
    x = np.full((r + 1, 3), r, dtype=dtype)
    got = chorus.allgather(x)
    want = np.concatenate([np.full((k + 1, 3), k, dtype=dtype) for k in range(n)])
    assert got.dtype == np.dtype(dtype) and np.array_equal(got, want)


def test_broadcast_in_and_out_of_place():
    r, n = chorus.rank(), chorus.size()
    root = n - 1
    x = np.full(5, r, dtype=np.int64)
    assert np.all(chorus.broadcast(x, root) == root) and np.all(x == r)
    assert chorus.broadcast_(x, root) is x and np.all(x == root)


def test_alltoall_with_and_without_splits():
    r, n = chorus.rank(), chorus.size()
    x = np.repeat(np.arange(n, dtype=np.float32), 2) + 100 * r   # two rows for each rank
    got = chorus.alltoall(x)
    assert np.array_equal(got, np.array([100 * k + r for k in range(n) for _ in range(2)], dtype=np.float32))
    splits = [k + 1 for k in range(n)]                            # k + 1 rows to rank k
    y = np.full(sum(splits), r, dtype=np.int32)
    out, received = chorus.alltoall(y, splits=splits)
    assert list(received) == [r + 1] * n
    assert np.array_equal(out, np.repeat(np.arange(n, dtype=np.int32), r + 1))


def test_reducescatter_uneven_rows():
    r, n = chorus.rank(), chorus.size()
    rows = 2 * n + 1
    x = np.arange(rows * 2, dtype=np.float64).reshape(rows, 2) + r
    total = sum(np.arange(rows * 2, dtype=np.float64).reshape(rows, 2) + k for k in range(n))
    first = r * (rows // n) + min(r, rows % n)
    mine = rows // n + (1 if r < rows % n else 0)
    assert np.array_equal(chorus.reducescatter(x, op=chorus.Sum), total[first:first + mine])
    assert np.allclose(chorus.reducescatter(x), total[first:first + mine] / n)


def test_grouped_collectives():
    r, n = chorus.rank(), chorus.size()
    arrays = [np.full(3, r + 1.0, dtype=np.float32), np.full((2, 2), r, dtype=np.int64)]
    out = chorus.grouped_allreduce(arrays, op=chorus.Sum)
    assert np.all(out[0] == n * (n + 1) / 2) and np.all(out[1] == n * (n - 1) / 2)
    gathered = chorus.grouped_allgather([np.full((1, 2), r, dtype=np.int32), np.full(r + 1, r, dtype=np.float64)])
    assert gathered[0].shape == (n, 2) and gathered[1].size == n * (n + 1) // 2
    scattered = chorus.grouped_reducescatter([np.ones((n, 2), dtype=np.float32)], op=chorus.Sum)
    assert np.all(scattered[0] == n) and scattered[0].shape == (1, 2)
    chorus.grouped_allreduce_(arrays, op=chorus.Sum)
    assert np.all(arrays[0] == n * (n + 1) / 2)


def test_async_handles_poll_wait_and_timeout():
    r, n = chorus.rank(), chorus.size()
    handles = [chorus.allreduce_async(np.full(64, float(i + r), dtype=np.float32), op=chorus.Sum, name=f"async.{i}")
               for i in range(20)]
    for i, h in enumerate(handles):
        assert np.all(chorus.synchronize(h) == n * i + n * (n - 1) / 2)
        assert chorus.poll(h)
    if n > 1:  # the last rank comes late: a short wait gives up, the handle stays usable
        x = np.ones(4, dtype=np.float32)
        if r != n - 1:
            h = chorus.allreduce_async(x, name="late")
            with pytest.raises(chorus.TimeoutError):
                h.wait(timeout=0.05)
            assert not h.poll()
            chorus.barrier()
        else:
            chorus.barrier()
            h = chorus.allreduce_async(x, name="late")
        assert np.all(h.wait(timeout=30) == 1)


def test_dlpack_arrays():
    torch = pytest.importorskip("torch")
    t = torch.full((3,), float(chorus.rank() + 1))
    n = chorus.size()
    assert np.all(chorus.allreduce(t, op=chorus.Sum) == n * (n + 1) / 2)
    chorus.allreduce_(t, op=chorus.Sum)              # in place, into the torch tensor's memory
    assert torch.all(t == n * (n + 1) / 2)


def test_process_sets(even_odd_sets):
    even, odd = even_odd_sets
    r = chorus.rank()
    mine = even if r % 2 == 0 else odd
    assert mine.included() and not (odd if mine is even else even).included()
    assert mine.size() == len(mine.ranks) and mine.rank() == mine.ranks.index(r)
    with pytest.raises(ValueError):
        (odd if mine is even else even).rank()
    got = chorus.allreduce(np.full(4, r, dtype=np.int32), op=chorus.Sum, process_set=mine)
    assert np.all(got == sum(mine.ranks))
    assert np.array_equal(chorus.allgather(np.array([r]), process_set=mine), np.array(mine.ranks))
    assert np.all(chorus.broadcast(np.array([r]), mine.ranks[-1], process_set=mine) == mine.ranks[-1])
    chorus.barrier(process_set=mine)


def test_duplicate_process_sets_are_refused(even_odd_sets):
    """As Horovod: one set per group of ranks; all ranks is the global set."""
    even, _ = even_odd_sets
    with pytest.raises(ValueError, match="duplicate process set"):
        chorus.add_process_set(list(reversed(even.ranks)))
    with pytest.raises(ValueError, match="duplicate process set"):
        chorus.add_process_set(range(chorus.size()))


def test_join_returns_the_last_rank_and_zeros_stand_in():
    r, n = chorus.rank(), chorus.size()
    if r == 0:
        time.sleep(0.2)  # rank 0 joins first: the others' next allreduce waits for it and gets its zeros
        last = chorus.join()
    else:
        got = chorus.allreduce(np.full(3, 1.0, dtype=np.float32), op=chorus.Sum, name="joined.extra")
        assert np.all(got == n - 1)
        last = chorus.join()
    assert chorus.allgather_object(last) == [last] * n   # the same answer everywhere
    assert last != 0 or n == 1


def test_mismatched_shapes_fail_on_every_rank():
    if chorus.size() < 2:
        pytest.skip("needs 2 ranks")
    x = np.ones(3 + chorus.rank(), dtype=np.float32)
    with pytest.raises(chorus.InvalidArgumentError, match=r"Mismatched allreduce of tensor 'mismatched': shape differs: \[3\] on rank 0; \[4\] on rank 1") as e:
        chorus.allreduce(x, name="mismatched")
    assert "mismatched" in str(e.value)


def test_mismatched_dtypes_and_ops_fail_on_every_rank():
    if chorus.size() < 2:
        pytest.skip("needs 2 ranks")
    r = chorus.rank()
    with pytest.raises(chorus.InvalidArgumentError, match="dtype"):
        chorus.allreduce(np.ones(3, dtype=np.float32 if r == 0 else np.int32), name="mixed.dtype")
    with pytest.raises(chorus.InvalidArgumentError):
        chorus.allreduce(np.ones(3, dtype=np.float32), op=chorus.Sum if r == 0 else chorus.Max, name="mixed.op")


def test_one_ranks_bad_input_fails_every_rank():
    bad = chorus.rank() == chorus.size() - 1
    x = [1, 2, 3] if bad else np.ones(3, dtype=np.float32)
    with pytest.raises(chorus.InvalidArgumentError, match=r"expected a NumPy array.*got list"):
        chorus.allreduce(x, name="wrong.type")
    y = np.ones(3, dtype=np.complex64 if bad else np.float32)
    with pytest.raises(chorus.InvalidArgumentError, match="complex64 is not supported"):
        chorus.allgather(y, name="wrong.dtype")


def test_duplicate_name_in_flight_is_a_value_error():
    # The last rank submits only after the barrier, so the first call is
    # still in flight everywhere else when the second comes.
    if chorus.size() < 2:
        pytest.skip("needs 2 ranks")
    last = chorus.rank() == chorus.size() - 1
    if not last:
        h = chorus.allreduce_async(np.ones(2, dtype=np.float32), name="dup")
        with pytest.raises(ValueError, match="dup"):
            chorus.allreduce_async(np.ones(2, dtype=np.float32), name="dup")
    chorus.barrier()
    if last:
        h = chorus.allreduce_async(np.ones(2, dtype=np.float32), name="dup")
    chorus.synchronize(h)


def test_objects():
    r, n = chorus.rank(), chorus.size()
    obj = {"hello": 123, 0: [1, 2], "rank": r}
    assert chorus.broadcast_object(obj, root_rank=n - 1)["rank"] == n - 1
    assert chorus.allgather_object(("r", r)) == [("r", k) for k in range(n)]


def test_topology_and_builds():
    assert 0 <= chorus.rank() < chorus.size()
    assert 0 <= chorus.local_rank() < chorus.local_size()
    assert 0 <= chorus.cross_rank() < chorus.cross_size()
    assert isinstance(chorus.is_homogeneous(), bool)
    assert chorus.mpi_enabled() != chorus.tcp_enabled() or chorus.size() == 1
    assert chorus.abi_version() >= 13
    assert isinstance(chorus.nccl_built(), int)


def test_the_gil_is_released_while_waiting():
    import threading
    r, n = chorus.rank(), chorus.size()
    counter = [0]
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            counter[0] += 1
    worker = threading.Thread(target=spin)
    worker.start()
    try:
        if r == n - 1:
            time.sleep(0.3)  # the others wait in chorus_wait meanwhile
        before = counter[0]
        chorus.allreduce(np.ones(4, dtype=np.float32), name="gil.wait")
        during = counter[0] - before
    finally:
        stop.set()
        worker.join()
    if r != n - 1:
        assert during > 1000  # the other thread ran while this one waited


def test_calls_before_init_raise_precondition_errors():
    import os
    import subprocess
    import sys
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMPI_", "PMIX_", "PMI_"))}
    for k in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "LOCAL_RANK"):
        env.pop(k, None)
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(chorus.__file__))  # this chorus, installed or not
    code = ("import numpy as np, chorus\n"
            "for call in (chorus.rank, chorus.size, lambda: chorus.allreduce(np.ones(2, np.float32)),\n"
            "             lambda: chorus.barrier(), lambda: chorus.start_timeline('x.json')):\n"
            "    try:\n"
            "        call()\n"
            "    except chorus.PreconditionError as e:\n"
            "        assert isinstance(e, ValueError)\n"
            "    else:\n"
            "        raise SystemExit('no error before init')\n"
            "assert not chorus.is_initialized()\n"
            "print('ok')\n")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "ok" in out.stdout, out.stderr


def test_the_compiled_hot_path_is_in_use_unless_turned_off():
    import os
    from chorus._library import fast
    if os.environ.get("CHORUS_PYTHON_CTYPES_ONLY") == "1":
        assert fast is None
    elif fast is None:
        pytest.skip("chorus._fast was not built here (no Python headers): ctypes alone")
    else:
        x = np.full(3, 2.0, dtype=np.float32)
        assert np.all(chorus.allreduce(x, op=chorus.Sum, name="fast.path") == 2.0 * chorus.size())
