"""chorus.jax's collectives, each eagerly and inside jax.jit: values against
the formula over every rank's input, every dtype, gradients against
chorus.torch's formulas, vmap and scan, program order with ranks out of
step, and bad input failing on every rank."""
import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import chorus.jax as hvd

REDUCE_DTYPES = [jnp.uint8, jnp.int8, jnp.int16, jnp.int32, jnp.float16, jnp.bfloat16, jnp.float32]
GATHER_DTYPES = [jnp.bool_] + REDUCE_DTYPES
MODES = ["eager", "jit"]


def run(mode, fn, *args):
    return fn(*args) if mode == "eager" else jax.jit(fn)(*args)


def values(shape, dtype, r):
    v = (np.arange(int(np.prod(shape))) % 5 + r + 1).reshape(shape)
    return jnp.asarray(v % 2 if dtype == jnp.bool_ else v, dtype=dtype)


def every_rank(shape, dtype):
    return np.stack([np.asarray(values(shape, dtype, k)).astype(np.float64) for k in range(hvd.size())])


def close(got, want, dtype):
    tol = 2e-2 if dtype in (jnp.float16, jnp.bfloat16) else 1e-6
    np.testing.assert_allclose(np.asarray(got).astype(np.float64), want, rtol=tol, atol=tol)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", REDUCE_DTYPES)
def test_allreduce_ops(mode, dtype):
    shape = (5, 3)
    x, every = values(shape, dtype, hvd.rank()), every_rank(shape, dtype)
    for op, want in [(hvd.Sum, every.sum(0)), (hvd.Min, every.min(0)), (hvd.Max, every.max(0))]:
        got = run(mode, lambda t: hvd.allreduce(t, op=op), x)
        assert got.dtype == dtype and got.shape == x.shape
        if jnp.issubdtype(dtype, jnp.integer):  # in the dtype's own arithmetic (wraps around)
            want = want.astype(np.int64).astype(np.dtype(dtype)).astype(np.float64)
        close(got, want, dtype)


@pytest.mark.parametrize("mode", MODES)
def test_allreduce_average_product_and_scale(mode):
    x, every = values((4,), jnp.float32, hvd.rank()), every_rank((4,), jnp.float32)
    close(run(mode, lambda t: hvd.allreduce(t), x), every.mean(0), jnp.float32)  # Average by default
    close(run(mode, lambda t: hvd.allreduce(t, op=hvd.Product), x), every.prod(0), jnp.float32)
    got = run(mode, lambda t: hvd.allreduce(t, op=hvd.Sum, prescale_factor=0.5, postscale_factor=3.0), x)
    close(got, every.sum(0) * 1.5, jnp.float32)
    close(run(mode, lambda t: hvd.allreduce(t, op=hvd.Adasum), x) * 0 + 1, np.ones(4), jnp.float32)


@pytest.mark.parametrize("mode", MODES)
def test_grouped_allreduce_of_a_pytree(mode):
    tree = {"w": values((3, 2), jnp.float32, hvd.rank()), "b": [values((2,), jnp.int32, hvd.rank())]}
    got = run(mode, lambda t: hvd.grouped_allreduce(t, op=hvd.Sum), tree)
    assert jax.tree_util.tree_structure(got) == jax.tree_util.tree_structure(tree)
    close(got["w"], every_rank((3, 2), jnp.float32).sum(0), jnp.float32)
    close(got["b"][0], every_rank((2,), jnp.int32).sum(0), jnp.int32)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", GATHER_DTYPES)
def test_allgather_and_broadcast(mode, dtype):
    x = values((2, 3), dtype, hvd.rank())
    got = run(mode, hvd.allgather, x)
    assert got.dtype == dtype
    close(got, every_rank((2, 3), dtype).reshape(-1, 3), dtype)
    root = hvd.size() - 1
    close(run(mode, lambda t: hvd.broadcast(t, root), x), every_rank((2, 3), dtype)[root], dtype)


def test_eager_allgather_of_rows_that_differ_per_rank():
    got = hvd.allgather(jnp.full((hvd.rank() + 1, 2), hvd.rank(), jnp.float32))
    want = np.concatenate([np.full((k + 1, 2), k) for k in range(hvd.size())])
    np.testing.assert_array_equal(np.asarray(got), want)
    a, b = hvd.grouped_allgather([jnp.ones((1,)) * hvd.rank(), jnp.ones((2, 2))])
    assert a.shape == (hvd.size(),) and b.shape == (2 * hvd.size(), 2)


@pytest.mark.parametrize("mode", MODES)
def test_reducescatter_and_alltoall(mode):
    n, r = hvd.size(), hvd.rank()
    rows = 2 * n + 1  # not divisible: the first rows mod n ranks get one row more
    x = values((rows, 2), jnp.float32, r)
    total = every_rank((rows, 2), jnp.float32).sum(0)
    start = sum(rows // n + (1 if k < rows % n else 0) for k in range(r))
    mine = rows // n + (1 if r < rows % n else 0)
    close(run(mode, lambda t: hvd.reducescatter(t, op=hvd.Sum), x), total[start:start + mine], jnp.float32)
    (a, b) = run(mode, lambda t: hvd.grouped_reducescatter([t, t * 2], op=hvd.Average), x)
    close(b, 2 * total[start:start + mine] / n, jnp.float32)
    send = jnp.arange(2 * n, dtype=jnp.float32) + 100 * r  # two rows to every rank
    got = run(mode, hvd.alltoall, send)
    want = np.concatenate([np.arange(2 * r, 2 * r + 2) + 100 * k for k in range(n)])
    np.testing.assert_array_equal(np.asarray(got), want)


def test_eager_alltoall_with_splits_gives_the_received_splits():
    n, r = hvd.size(), hvd.rank()
    splits = [k + 1 for k in range(n)]  # k+1 rows to rank k
    out, received = hvd.alltoall(jnp.full((sum(splits),), float(r)), splits=splits)
    np.testing.assert_array_equal(np.asarray(received), [r + 1] * n)
    np.testing.assert_array_equal(np.asarray(out), np.repeat(np.arange(n, dtype=np.float32), r + 1))


def test_gradients_follow_chorus_torch():
    n, r = hvd.size(), hvd.rank()
    x = jnp.arange(4.0) + r
    w = jnp.arange(4.0) + 1  # the same weights on every rank

    def loss(op):
        return lambda t: jnp.sum(hvd.allreduce(t, op=op) * w)
    # allreduce: the cotangent allreduced with the same op
    np.testing.assert_allclose(jax.jit(jax.grad(loss(hvd.Sum)))(x), n * w)
    np.testing.assert_allclose(jax.jit(jax.grad(loss(hvd.Average)))(x), w)
    # allgather: averaged over the set, this rank's rows
    g = jax.jit(jax.grad(lambda t: jnp.sum(hvd.allgather(t) * jnp.arange(4.0 * n).reshape(-1, 1))))(jnp.ones((4, 1)))
    np.testing.assert_allclose(np.asarray(g).ravel(), np.arange(4 * r, 4 * r + 4))
    # broadcast: averaged, zero off the root
    g = jax.grad(lambda t: jnp.sum(hvd.broadcast(t, 0) * w))(x)
    np.testing.assert_allclose(g, w if r == 0 else 0 * w)
    with pytest.raises(Exception, match="no gradient"):
        jax.grad(loss(hvd.Max))(x)


def test_vmap_and_scan():
    batch = jnp.stack([jnp.arange(3.0) + hvd.rank() + k for k in range(4)])
    got = jax.jit(jax.vmap(lambda v: hvd.allreduce(v, op=hvd.Sum)))(batch)
    want = sum(np.stack([np.arange(3.0) + q + k for k in range(4)]) for q in range(hvd.size()))
    np.testing.assert_allclose(got, want)

    def steps(x):
        return jax.lax.scan(lambda c, _: (hvd.allreduce(c, op=hvd.Sum), None), x, None, length=3)[0]
    np.testing.assert_allclose(jax.jit(steps)(jnp.ones(2)), np.full(2, float(hvd.size()) ** 3))


def test_collectives_keep_program_order_with_ranks_out_of_step():
    @jax.jit
    def many(x):
        outs = []
        for k in range(20):  # independent of each other: only the ordered effect orders them
            outs.append(hvd.allreduce(x + k, op=hvd.Sum) if k % 2 else hvd.allgather(x + k))
        return outs
    time.sleep(0.2 * hvd.rank())  # ranks trace and run at different times
    for _ in range(3):
        outs = many(jnp.ones(3) * hvd.rank())
    total = sum(range(hvd.size()))
    for k, o in enumerate(outs):
        if k % 2:
            np.testing.assert_allclose(o, np.full(3, total + hvd.size() * k))
        else:
            assert o.shape == (3 * hvd.size(),)


def test_barrier_and_join_inside_jit():
    jax.jit(lambda: hvd.barrier())()
    hvd.barrier()
    assert 0 <= int(jax.jit(hvd.join)()) < hvd.size()


def test_bad_input_fails_on_every_rank():
    if hvd.size() > 1:
        # shapes that differ across ranks: every rank's call fails, naming the tensor
        with pytest.raises(Exception, match="jax.test.mismatch.*shape"):
            jax.jit(lambda x: hvd.allreduce(x, name="jax.test.mismatch"))(jnp.ones(3 + hvd.rank())).block_until_ready()
        # dtypes that differ across ranks
        dtype = jnp.float32 if hvd.rank() == 0 else jnp.int32
        with pytest.raises(Exception, match="jax.test.dtype"):
            jax.jit(lambda x: hvd.allreduce(x, op=hvd.Sum, name="jax.test.dtype"))(
                jnp.ones(3, dtype)).block_until_ready()
        # rows that differ across ranks inside jit: the traced shape is wrong on every rank
        with pytest.raises(Exception, match="first dimension"):
            jax.jit(hvd.allgather)(jnp.ones((hvd.rank() + 1, 2))).block_until_ready()
        # what only one rank cannot send inside jit is refused on every rank, not raised on that one alone
        n = hvd.size()
        with pytest.raises(Exception, match=r"jax.test.uneven.*refused on rank 1.*do not split over"):
            jax.jit(lambda x: hvd.alltoall(x, name="jax.test.uneven"))(
                jnp.ones(n + (1 if hvd.rank() == 1 else 0))).block_until_ready()
        with pytest.raises(Exception, match=r"jax.test.complex.*refused on rank 1.*complex64"):
            jax.jit(lambda x: hvd.allreduce(x, name="jax.test.complex"))(
                jnp.ones(2, jnp.complex64 if hvd.rank() == 1 else jnp.float32)).block_until_ready()
        with pytest.raises(Exception, match=r"refused on rank 1.*not a scalar"):
            jax.jit(hvd.allgather)(jnp.ones(() if hvd.rank() == 1 else (2,))).block_until_ready()
    with pytest.raises(ValueError, match="refused on ranks? .*bool"):
        hvd.allreduce(jnp.ones(2, jnp.bool_), op=hvd.Sum)
    with pytest.raises(ValueError, match="refused on ranks? .*complex64"):
        hvd.allreduce(jnp.ones(2, jnp.complex64))
    with pytest.raises(TypeError, match="name must be a str"):
        hvd.allreduce(jnp.ones(2), name=3)
    with pytest.raises(Exception, match="equal splits"):
        jax.jit(lambda x: hvd.alltoall(x, splits=[1] * hvd.size()))(jnp.ones(hvd.size())).block_until_ready()
    # and the runtime goes on
    np.testing.assert_allclose(hvd.allreduce(jnp.ones(2), op=hvd.Sum), np.full(2, hvd.size()))


def test_process_sets_inside_and_outside_jit():
    if hvd.size() < 2:
        pytest.skip("a process set smaller than the world needs two ranks")
    members = [0, 1] if hvd.size() > 2 else [1]  # all ranks would be the global set again (refused, as Horovod)
    ps = hvd.add_process_set(members)
    try:
        if ps.included():
            x = jnp.ones(3) * (hvd.rank() + 1)
            root = members[-1]
            for mode in MODES:
                np.testing.assert_allclose(run(mode, lambda t: hvd.allreduce(t, op=hvd.Sum, process_set=ps), x),
                                           np.full(3, float(sum(m + 1 for m in members))))
                assert run(mode, lambda t: hvd.allgather(t, process_set=ps), x).shape == (3 * len(members),)
                np.testing.assert_allclose(run(mode, lambda t: hvd.broadcast(t, root, process_set=ps), x),
                                           np.full(3, root + 1.0))
    finally:
        hvd.remove_process_set(ps)
