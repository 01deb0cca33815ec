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
    got = hvd.alltoall(x)  # no splits given: the received rows alone, as Horovod's
    assert isinstance(got, tf.Tensor)
    np.testing.assert_array_equal(got.numpy()[:, 0], np.repeat(np.arange(n), 2))


@pytest.mark.parametrize("mode", MODES)
def test_uint16_moves_bit_exact(mode):
    """uint16 (Horovod's allgather, broadcast, alltoall take it) travels as
    its bits: values past int16's range come back unchanged."""
    n, r = hvd.size(), hvd.rank()
    x = tf.constant([[65535 - r, 40000 + r]], tf.uint16)
    rows = tf.constant([[65535 - r, 40000 + r]] * n, tf.uint16)  # one row to each rank

    def moved(t, each):
        return hvd.allgather(t), hvd.broadcast(t, 0), hvd.alltoall(each)

    gathered, broadcast, exchanged = run(mode, moved, x, rows)
    expected = np.array([[65535 - k, 40000 + k] for k in range(n)], np.uint16)
    assert gathered.dtype == broadcast.dtype == exchanged.dtype == tf.uint16
    np.testing.assert_array_equal(gathered.numpy(), expected)
    np.testing.assert_array_equal(broadcast.numpy(), [[65535, 40000]])
    np.testing.assert_array_equal(exchanged.numpy(), expected)
    with pytest.raises(TypeError, match="allreduce does not take uint16"):
        hvd.allreduce(x)


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
            received = hvd.alltoall(t)
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


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("scale_local", [True, False])
def test_local_sources_keep_their_own_gradients(mode, scale_local):
    """register_local_source (and PartialDistributedGradientTape's
    local_layers): a local variable's gradient is this rank's own, divided
    by the size when scale_local_gradients; the others are averaged."""
    import keras
    n, r = hvd.size(), hvd.rank()
    shared = tf.Variable([1.0, 1.0])
    local = keras.layers.Dense(1, use_bias=False, kernel_initializer="ones")
    local.build((None, 2))

    def step(scale):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(shared * scale) + tf.reduce_sum(local(tf.fill([1, 2], scale)))
        partial = hvd.PartialDistributedGradientTape(tape, local_layers=local, scale_local_gradients=scale_local)
        return partial.gradient(loss, [shared, local.kernel])

    g_shared, g_local = run(mode, step, tf.constant(float(r + 1)))
    np.testing.assert_allclose(g_shared.numpy(), np.full(2, (n + 1) / 2))
    np.testing.assert_allclose(g_local.numpy(), np.full((2, 1), (r + 1) / (n if scale_local else 1)))

    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(shared * float(r + 1)) + tf.reduce_sum(local(tf.fill([1, 2], float(r + 1))))
    tape = hvd.DistributedGradientTape(tape, op=hvd.Sum)
    tape.register_local_source(local.kernel)
    local_pairs, global_pairs = tape.get_local_and_global_gradients(loss, [shared, local.kernel])
    assert [v is local.kernel for v, _ in local_pairs] == [True]
    np.testing.assert_allclose(local_pairs[0][1].numpy(), np.full((2, 1), (r + 1) / n))
    np.testing.assert_allclose(global_pairs[0][1].numpy(), np.full(2, n * (n + 1) / 2))
    with pytest.raises(ValueError, match="Keras layers"):
        hvd.PartialDistributedGradientTape(tf.GradientTape(), local_layers=[shared])


def test_broadcast_in_place_and_global_variables():
    """broadcast_ assigns root's values and returns them; the TF1-graph
    broadcast_global_variables refuses eager execution (as Horovod), and in
    a graph broadcasts every global variable."""
    r, n = hvd.rank(), hvd.size()
    root = n - 1
    v = tf.Variable(tf.fill([2, 2], float(r)))
    flag = tf.Variable([r % 2 == 0, True])
    got_v, got_flag = hvd.broadcast_([v, flag], root, name="tf.inplace")
    np.testing.assert_array_equal(v.numpy(), np.full((2, 2), root))
    np.testing.assert_array_equal(got_v.numpy(), np.full((2, 2), root))
    np.testing.assert_array_equal(flag.numpy(), [root % 2 == 0, True])
    assert got_flag.dtype == tf.bool
    assert hvd._executing_eagerly() and hvd.util._executing_eagerly()
    with pytest.raises(RuntimeError, match="broadcast_variables"):
        hvd.broadcast_global_variables(0)
    with tf.Graph().as_default():
        g = tf.compat.v1.get_variable("g", initializer=tf.fill([3], float(r)))
        assert not hvd._executing_eagerly()
        op = hvd.broadcast_global_variables(0)
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            sess.run(op)
            np.testing.assert_array_equal(sess.run(g), np.zeros(3))


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
    with pytest.raises(TypeError, match="reducescatter does not take uint16"):  # as Horovod: moved, not reduced
        hvd.reducescatter(tf.constant([1], tf.uint16))
    with pytest.raises(TypeError, match="uint32"):
        hvd.allgather(tf.constant([1], tf.uint32))
    with pytest.raises(TypeError, match="tf.Tensor"):
        hvd.allgather(object())
