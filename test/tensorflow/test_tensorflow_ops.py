"""chorus.tensorflow's collectives with horovod.tensorflow's semantics, each
eagerly and inside tf.function (Horovod's test_tensorflow.py is the
checklist: docs/tensorflow.md maps its tests to these): values against the
formula over every rank's input, gradients, errors on every rank."""
import numpy as np
import pytest
import tensorflow as tf

import chorus.tensorflow as hvd

REDUCE_DTYPES = [tf.uint8, tf.int8, tf.int16, tf.int32, tf.int64, tf.float16, tf.bfloat16, tf.float32, tf.float64]
GATHER_DTYPES = [tf.bool] + REDUCE_DTYPES
MODES = ["eager", "function"]


def run(mode, fn, *args):
    """fn(*args) eagerly, or traced into a tf.function and called."""
    return fn(*args) if mode == "eager" else tf.function(fn)(*args)


def values(shape, dtype, r):
    v = (np.arange(int(np.prod(shape))) % 5 + r + 1).reshape(shape)
    return tf.constant(v % 2 if dtype == tf.bool else v, dtype=dtype)


def every_rank(shape, dtype):
    return np.stack([values(shape, dtype, k).numpy().astype(np.float64) for k in range(hvd.size())])


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", REDUCE_DTYPES)
def test_allreduce_ops(mode, dtype):
    shape = [5, 4, 3]
    x, every = values(shape, dtype, hvd.rank()), every_rank(shape, dtype)
    tol = 2e-2 if dtype in (tf.float16, tf.bfloat16) else 1e-6
    for op, want in [(hvd.Sum, every.sum(0)), (hvd.Min, every.min(0)), (hvd.Max, every.max(0)),
                     (hvd.Product, every.prod(0))]:
        got = run(mode, lambda t: hvd.allreduce(t, op=op), x)
        assert got.dtype == dtype and got.shape == x.shape
        if dtype.is_integer:  # in the dtype's own arithmetic: int8 products wrap around
            want = want.astype(np.int64).astype(dtype.as_numpy_dtype)
            np.testing.assert_array_equal(got.numpy(), want)
        else:
            np.testing.assert_allclose(tf.cast(got, tf.float64).numpy(), want, rtol=tol)
    if dtype.is_floating:
        got = run(mode, lambda t: hvd.allreduce(t), x)  # Average: Horovod's default
        np.testing.assert_allclose(tf.cast(got, tf.float64).numpy(), every.mean(0), rtol=tol)


@pytest.mark.parametrize("mode", MODES)
def test_allreduce_scales_and_variables(mode):
    n = hvd.size()
    v = tf.Variable(tf.fill([6], float(hvd.rank() + 1)))
    got = run(mode, lambda: hvd.allreduce(v, op=hvd.Sum, prescale_factor=3.0, postscale_factor=0.5))
    np.testing.assert_allclose(got.numpy(), np.full(6, 1.5 * n * (n + 1) / 2))
    got = run(mode, lambda: hvd.allreduce(v, op=hvd.Average, postscale_factor=4.0))
    np.testing.assert_allclose(got.numpy(), np.full(6, 4.0 * (n + 1) / 2))


@pytest.mark.parametrize("mode", MODES)
def test_grouped_allreduce_mixed_dtypes(mode):
    n, r = hvd.size(), hvd.rank()
    xs = [tf.fill([3], float(r)), tf.fill([2, 2], r + 1), tf.constant(float(r), tf.float64)]
    got = run(mode, lambda *t: hvd.grouped_allreduce(list(t), op=hvd.Sum), *xs)
    total = n * (n - 1) / 2
    np.testing.assert_allclose(got[0].numpy(), np.full(3, total))
    np.testing.assert_array_equal(got[1].numpy(), np.full((2, 2), total + n))
    assert got[2].dtype == tf.float64 and float(got[2]) == total


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", GATHER_DTYPES)
def test_allgather_rows_per_rank(mode, dtype):
    n, r = hvd.size(), hvd.rank()
    x = values([r + 1, 3], dtype, r)
    got = run(mode, hvd.allgather, x)
    want = np.concatenate([values([k + 1, 3], dtype, k).numpy() for k in range(n)])
    assert got.dtype == dtype
    np.testing.assert_array_equal(got.numpy(), want)


@pytest.mark.parametrize("mode", MODES)
def test_grouped_allgather(mode):
    n, r = hvd.size(), hvd.rank()
    xs = [tf.fill([r + 1], r), tf.fill([1, 2], float(r))]
    got = run(mode, lambda *t: hvd.grouped_allgather(list(t)), *xs)
    np.testing.assert_array_equal(got[0].numpy(), np.concatenate([np.full(k + 1, k) for k in range(n)]))
    np.testing.assert_array_equal(got[1].numpy(), np.stack([np.full(2, float(k)) for k in range(n)]))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", GATHER_DTYPES)
def test_broadcast_from_each_root(mode, dtype):
    for root in range(hvd.size()):
        x = values([4, 2], dtype, hvd.rank())
        got = run(mode, lambda t: hvd.broadcast(t, root), x)
        np.testing.assert_array_equal(got.numpy(), values([4, 2], dtype, root).numpy())


@pytest.mark.parametrize("mode", MODES)
def test_alltoall_splits_and_received(mode):
    n, r = hvd.size(), hvd.rank()
    splits = tf.constant([k + 1 for k in range(n)], tf.int32)  # rank r sends k+1 rows to rank k
    x = tf.reshape(tf.range(int(splits.numpy().sum()) * 2, dtype=tf.float32), [-1, 2]) + 100 * r
    got, received = run(mode, lambda t, s: hvd.alltoall(t, s), x, splits)
    assert received.numpy().tolist() == [r + 1] * n
    rows = []
    for k in range(n):
        start = sum(j + 1 for j in range(r))
        rows.append(np.arange(start * 2, (start + r + 1) * 2, dtype=np.float32).reshape(-1, 2) + 100 * k)
    np.testing.assert_array_equal(got.numpy(), np.concatenate(rows))


def test_alltoall_equal_splits():
    n = hvd.size()
    x = tf.fill([2 * n, 1], hvd.rank())
    got, received = hvd.alltoall(x)
    assert received.numpy().tolist() == [2] * n
    np.testing.assert_array_equal(got.numpy()[:, 0], np.repeat(np.arange(n), 2))


@pytest.mark.parametrize("mode", MODES)
def test_reducescatter_sum_and_average(mode):
    n, r = hvd.size(), hvd.rank()
    x = tf.reshape(tf.range(2 * n * 3, dtype=tf.float32), [2 * n, 3]) * (r + 1)
    total = np.arange(2 * n * 3, dtype=np.float32).reshape(2 * n, 3) * (n * (n + 1) / 2)
    got = run(mode, lambda t: hvd.reducescatter(t, op=hvd.Sum), x)
    np.testing.assert_allclose(got.numpy(), total[2 * r:2 * r + 2])
    got = run(mode, lambda t: hvd.reducescatter(t), x)  # Average
    np.testing.assert_allclose(got.numpy(), total[2 * r:2 * r + 2] / n, rtol=1e-6)


@pytest.mark.parametrize("mode", MODES)
def test_grouped_reducescatter_with_scales(mode):
    n, r = hvd.size(), hvd.rank()
    xs = [tf.fill([n, 2], float(r + 1)), tf.fill([2 * n], float(r))]
    got = run(mode, lambda *t: hvd.grouped_reducescatter(list(t), op=hvd.Sum, prescale_factor=2.0,
                                                         postscale_factor=0.25), *xs)
    np.testing.assert_allclose(got[0].numpy(), np.full((1, 2), 0.5 * n * (n + 1) / 2))
    np.testing.assert_allclose(got[1].numpy(), np.full(2, 0.5 * n * (n - 1) / 2))


def test_sparse_allreduce_refusals():
    slices = tf.IndexedSlices(tf.ones([1, 2]), tf.constant([0]), tf.constant([4, 2]))
    with pytest.raises(NotImplementedError, match="prescale"):
        hvd.allreduce(slices, op=hvd.Sum, prescale_factor=2.0)
    with pytest.raises(NotImplementedError, match="Max"):
        hvd.allreduce(slices, op=hvd.Max)


def test_barrier_and_join_in_a_function():
    @tf.function
    def step():
        hvd.barrier()
        return hvd.join()

    assert int(step()) in range(hvd.size())


# ---- gradients, against Horovod's formulas ----

@pytest.mark.parametrize("mode", MODES)
def test_gradients(mode):
    n, r = hvd.size(), hvd.rank()
    x = tf.fill([r + 1, 2], 1.0)

    root = n - 1
    total_rows = n * (n + 1) // 2
    weights = tf.reshape(tf.range(total_rows * 2, dtype=tf.float32), [total_rows, 2]) * float(r + 1)

    def grads(t):
        with tf.GradientTape(persistent=True) as tape:
            tape.watch(t)
            s = tf.reduce_sum(hvd.allreduce(t[:1], op=hvd.Sum))
            a = tf.reduce_sum(hvd.allreduce(t[:1], op=hvd.Average) * 5.0)
            g = tf.reduce_sum(hvd.allgather(t) * weights)  # a different upstream value per row and rank
            b = tf.reduce_sum(hvd.broadcast(t[:1], root) * 3.0)
        return [tape.gradient(v, t) for v in (s, a, g, b)]

    ds, da, dg, db = run(mode, grads, x)
    first_row = np.zeros((r + 1, 2))
    first_row[0] = 1.0
    np.testing.assert_allclose(ds.numpy(), n * first_row)  # the gradient of the sum of every rank's loss
    np.testing.assert_allclose(da.numpy(), 5.0 * first_row)
    mean_weights = np.arange(total_rows * 2, dtype=np.float64).reshape(total_rows, 2) * (n + 1) / 2
    offset = r * (r + 1) // 2  # this rank's rows in the gathered tensor
    np.testing.assert_allclose(dg.numpy(), mean_weights[offset:offset + r + 1])  # averaged over the ranks
    np.testing.assert_allclose(db.numpy(), 3.0 * first_row if r == root else 0 * first_row)


@pytest.mark.parametrize("mode", MODES)
def test_alltoall_and_reducescatter_gradients(mode):
    n, r = hvd.size(), hvd.rank()
    x = tf.fill([2 * n, 2], 1.0)

    def grads(t):
        with tf.GradientTape(persistent=True) as tape:
            tape.watch(t)
            received, _ = hvd.alltoall(t)
            a = tf.reduce_sum(received * float(r + 1))
            s = tf.reduce_sum(hvd.reducescatter(t, op=hvd.Sum) * float(r + 1))
        return tape.gradient(a, t), tape.gradient(s, t)

    da, ds = run(mode, grads, x)
    # alltoall: rows sent to rank k come back with k's upstream value k + 1.
    np.testing.assert_allclose(da.numpy()[:, 0], np.repeat(np.arange(1, n + 1, dtype=np.float64), 2))
    # reducescatter Sum: the allgathered upstream (rank k's block is k + 1) times the set size.
    np.testing.assert_allclose(ds.numpy()[:, 0], n * np.repeat(np.arange(1, n + 1, dtype=np.float64), 2))


# ---- the tape and variables ----

@pytest.mark.parametrize("mode", MODES)
def test_distributed_gradient_tape_averages(mode):
    n, r = hvd.size(), hvd.rank()
    w = tf.Variable([[1.0, 2.0], [3.0, 4.0]])
    b = tf.Variable([0.5, -0.5])

    def step(scale):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(w * scale) + tf.reduce_sum(b * scale * 2.0)
        tape = hvd.DistributedGradientTape(tape)
        return tape.gradient(loss, [w, b])

    gw, gb = run(mode, step, tf.constant(float(r + 1)))
    mean = (n + 1) / 2
    np.testing.assert_allclose(gw.numpy(), np.full((2, 2), mean))
    np.testing.assert_allclose(gb.numpy(), np.full(2, 2 * mean))


def test_distributed_gradient_tape_sparse_gradients():
    n, r = hvd.size(), hvd.rank()
    emb = tf.Variable(tf.zeros([4, 2]))
    for sparse_as_dense in (False, True):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.gather(emb, [r % 4]))
        grads = hvd.DistributedGradientTape(tape, sparse_as_dense=sparse_as_dense, op=hvd.Sum).gradient(loss, [emb])
        dense = tf.convert_to_tensor(grads[0]).numpy()
        want = np.zeros((4, 2))
        for k in range(n):
            want[k % 4] += 1.0
        np.testing.assert_allclose(dense, want)
        assert isinstance(grads[0], tf.IndexedSlices) != sparse_as_dense


def test_broadcast_variables_of_a_keras_model_in_a_function():
    import keras
    keras.utils.set_random_seed(hvd.rank())
    layer = keras.layers.Dense(3)
    layer.build((None, 2))
    mine = [v.numpy() for v in layer.variables]
    root = hvd.broadcast_object(mine, root_rank=0)
    @tf.function
    def broadcast():
        hvd.broadcast_variables(layer.variables, root_rank=0)

    broadcast()
    for v, want in zip(layer.variables, root):
        np.testing.assert_array_equal(v.numpy(), want)


def test_broadcast_variables_and_objects():
    v = tf.Variable(tf.fill([3], float(hvd.rank())))
    hvd.broadcast_variables([v], root_rank=0)
    np.testing.assert_array_equal(v.numpy(), np.zeros(3))
    assert hvd.broadcast_object({"rank": hvd.rank()}, root_rank=0) == {"rank": 0}
    assert hvd.allgather_object(hvd.rank()) == list(range(hvd.size()))


def test_fp16_compression_keeps_the_dtype():
    x = tf.fill([5], 1.5)
    got = hvd.allreduce(x, op=hvd.Sum, compression=hvd.Compression.fp16)
    assert got.dtype == tf.float32
    np.testing.assert_allclose(got.numpy(), np.full(5, 1.5 * hvd.size()))


# ---- errors: on every rank, never a hang ----

def test_mismatched_shapes_fail_on_every_rank():
    if hvd.size() < 2:
        pytest.skip("needs 2 ranks or more")
    x = tf.zeros([2 + hvd.rank()])
    with pytest.raises(tf.errors.FailedPreconditionError, match="shape"):
        hvd.allreduce(x, name="tf.mismatch")


def test_mismatched_dtypes_fail_on_every_rank():
    if hvd.size() < 2:
        pytest.skip("needs 2 ranks or more")
    x = tf.zeros([3], tf.float32 if hvd.rank() == 0 else tf.float64)
    with pytest.raises(tf.errors.FailedPreconditionError):
        run("function", lambda t: hvd.allreduce(t, name="tf.dtype_mismatch"), x)


def test_mismatches_of_the_other_collectives_fail_on_every_rank():
    if hvd.size() < 2:
        pytest.skip("needs 2 ranks or more")
    r = hvd.rank()
    with pytest.raises(tf.errors.FailedPreconditionError):
        hvd.allgather(tf.zeros([2, 2 + r]), name="tf.gather_mismatch")  # trailing dimensions differ
    with pytest.raises(tf.errors.FailedPreconditionError):
        hvd.broadcast(tf.zeros([3], tf.float32 if r == 0 else tf.int32), 0, name="tf.bcast_mismatch")
    with pytest.raises(tf.errors.FailedPreconditionError):
        hvd.reducescatter(tf.zeros([4 + r, 2]), name="tf.rs_mismatch")


def test_a_refused_type_is_a_type_error():
    with pytest.raises(TypeError, match="bool"):
        hvd.allreduce(tf.constant([True]))
    with pytest.raises(TypeError, match="uint16"):  # Horovod takes it; Chorus carries no uint16
        hvd.allgather(tf.constant([1], tf.uint16))
    with pytest.raises(TypeError, match="tf.Tensor"):
        hvd.allgather(object())
