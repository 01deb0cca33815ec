"""What the chorus.keras tests of every Keras backend share: a small linear
problem split over the ranks (ROWS rows each), a two-layer model, and a fit
whose weights are compared with one process training on all the data."""
import keras
import numpy as np

ROWS = 8  # per rank


def data(size):
    """Every rank's rows, the same on every rank: (x, y) of ROWS * size rows."""
    rng = np.random.default_rng(3)
    x = rng.normal(size=(ROWS * size, 3)).astype(np.float32)
    return x, (x @ np.array([[1.0], [-1.0], [2.0]], np.float32)).astype(np.float32)


def model(seed=0):
    keras.utils.set_random_seed(seed)
    return keras.Sequential([keras.Input((3,)), keras.layers.Dense(4), keras.layers.Dense(1)])


def fit(net, optimizer, x, y, batch, epochs, callbacks=()):
    """Trains in order (no shuffle); returns (weights, history)."""
    net.compile(optimizer=optimizer, loss="mse")
    history = net.fit(x, y, batch_size=batch, epochs=epochs, shuffle=False, verbose=0, callbacks=list(callbacks))
    return [w.copy() for w in net.get_weights()], history


def shard(a, rank):
    """This rank's ROWS rows of `a`."""
    return a[ROWS * rank:ROWS * (rank + 1)]


def check_fit_matches_one_process(hvd, compression, tol):
    """fit with DistributedOptimizer on this rank's rows gives the weights
    of one process fitting all the rows (batch = all of them)."""
    x, y = data(hvd.size())
    opt = hvd.DistributedOptimizer(keras.optimizers.SGD(0.05), compression=compression)
    got, _ = fit(model(), opt, shard(x, hvd.rank()), shard(y, hvd.rank()), ROWS, 5)
    want, _ = fit(model(), keras.optimizers.SGD(0.05), x, y, len(x), 5)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol)


def check_backward_passes_per_step(hvd):
    """Two half batches accumulated, their mean reduced: one update per
    epoch, as one process on all the rows."""
    x, y = data(hvd.size())
    opt = hvd.DistributedOptimizer(keras.optimizers.SGD(0.05), backward_passes_per_step=2,
                                   average_aggregated_gradients=True)
    got, _ = fit(model(), opt, shard(x, hvd.rank()), shard(y, hvd.rank()), ROWS // 2, 3)
    want, _ = fit(model(), keras.optimizers.SGD(0.05), x, y, len(x), 3)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-6)


def check_callbacks(hvd):
    """BroadcastGlobalVariablesCallback starts every rank from rank 0's
    weights (learning rate 0 keeps them); MetricAverageCallback makes the
    losses, different on every rank, the same everywhere."""
    x, y = data(hvd.size())
    root_weights = hvd.broadcast_object([w.copy() for w in model(seed=0).get_weights()], root_rank=0)
    got, history = fit(model(seed=hvd.rank()), hvd.DistributedOptimizer(keras.optimizers.SGD(0.0)),
                       shard(x, hvd.rank()), shard(y, hvd.rank()) * (1 + hvd.rank()), ROWS, 2,
                       [hvd.callbacks.BroadcastGlobalVariablesCallback(0), hvd.callbacks.MetricAverageCallback()])
    for g, w in zip(got, root_weights):
        np.testing.assert_allclose(g, w)
    losses = hvd.allgather_object(history.history["loss"])
    assert all(np.allclose(loss, losses[0]) for loss in losses)


def check_keras_state(hvd, make_state):
    """An elastic Keras state (`make_state(model, optimizer, epoch=0)`):
    restore() brings back the committed weights and values, sync() rank 0's
    weights everywhere, with the optimizer built so every rank's variables
    line up."""
    keras.utils.set_random_seed(hvd.rank())
    net = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    opt = keras.optimizers.Adam(0.1)
    state = make_state(net, opt, epoch=0)
    committed = [w.copy() for w in net.get_weights()]
    state.epoch = 2
    state.commit()
    net.set_weights([w + 1 for w in committed])
    state.epoch = 3
    state.restore()
    for got, want in zip(net.get_weights(), committed):
        np.testing.assert_array_equal(got, want)
    assert state.epoch == 2
    state.sync()
    root = hvd.broadcast_object([w.copy() for w in net.get_weights()], root_rank=0)
    for got, want in zip(net.get_weights(), root):
        np.testing.assert_array_equal(got, want)
    assert len(opt.variables) > 0


def check_value_collectives(hvd):
    """horovod.keras's allreduce, allgather, broadcast and reducescatter of
    plain values: backend tensors back, with the formula's values."""
    n, r = hvd.size(), hvd.rank()
    mine = np.full((n, 2), float(r + 1), np.float32)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(hvd.allreduce(mine, name="keras.v.ar")), (n + 1) / 2)
    summed = hvd.allreduce(mine, name="keras.v.fp16", op=hvd.Sum, compression=hvd.Compression.fp16)
    assert keras.ops.convert_to_numpy(summed).dtype == np.float32
    np.testing.assert_allclose(keras.ops.convert_to_numpy(summed), n * (n + 1) / 2)
    gathered = keras.ops.convert_to_numpy(hvd.allgather(mine[:1], name="keras.v.ag"))
    np.testing.assert_allclose(gathered[:, 0], np.arange(1, n + 1))
    np.testing.assert_allclose(keras.ops.convert_to_numpy(hvd.broadcast(mine, n - 1, name="keras.v.bc")), n)
    block = keras.ops.convert_to_numpy(hvd.reducescatter(mine, name="keras.v.rs", op=hvd.Sum))
    np.testing.assert_allclose(block, np.full((1, 2), n * (n + 1) / 2))
