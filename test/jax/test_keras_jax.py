"""chorus.keras on Keras 3's JAX backend (KERAS_BACKEND=jax, set here before
Keras loads: this module runs where nothing imported Keras first): model.fit
with DistributedOptimizer, its train step jitted by Keras with chorus.jax's
allreduce inside, against one process training on every rank's data; and
the callbacks."""
import os

os.environ["KERAS_BACKEND"] = "jax"

import numpy as np  # noqa: E402
import pytest  # noqa: E402

keras = pytest.importorskip("keras")
if int(keras.__version__.split(".")[0]) < 3 or keras.backend.backend() != "jax":
    pytest.skip("Keras 3 on the JAX backend is not what loaded here", allow_module_level=True)

import chorus.keras as hvd  # noqa: E402

ROWS = 8  # per rank


def _data():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(ROWS * hvd.size(), 3)).astype(np.float32)
    return x, (x @ np.array([[1.0], [-1.0], [2.0]], np.float32)).astype(np.float32)


def _model(seed=0):
    keras.utils.set_random_seed(seed)
    return keras.Sequential([keras.Input((3,)), keras.layers.Dense(4), keras.layers.Dense(1)])


def _fit(model, optimizer, x, y, batch, epochs, callbacks=()):
    model.compile(optimizer=optimizer, loss="mse")
    history = model.fit(x, y, batch_size=batch, epochs=epochs, shuffle=False, verbose=0, callbacks=list(callbacks))
    return [w.copy() for w in model.get_weights()], history


def _shard(a):
    return a[ROWS * hvd.rank():ROWS * (hvd.rank() + 1)]


@pytest.mark.parametrize("compression", ["none", "fp16"])
def test_fit_on_the_jax_backend_matches_one_process_on_all_the_data(compression):
    from chorus.jax import Compression
    x, y = _data()
    opt = hvd.DistributedOptimizer(keras.optimizers.SGD(0.05), compression=getattr(Compression, compression))
    got, _ = _fit(_model(), opt, _shard(x), _shard(y), ROWS, 5)
    want, _ = _fit(_model(), keras.optimizers.SGD(0.05), x, y, len(x), 5)
    tol = 2e-3 if compression == "fp16" else 1e-5
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol)


def test_backward_passes_per_step_on_the_jax_backend():
    x, y = _data()
    opt = hvd.DistributedOptimizer(keras.optimizers.SGD(0.05), backward_passes_per_step=2,
                                   average_aggregated_gradients=True)
    got, _ = _fit(_model(), opt, _shard(x), _shard(y), ROWS // 2, 3)  # 2 batches: one update per epoch
    want, _ = _fit(_model(), keras.optimizers.SGD(0.05), x, y, len(x), 3)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-6)


def test_callbacks_on_the_jax_backend():
    x, y = _data()
    root_weights = hvd.broadcast_object([w.copy() for w in _model(seed=0).get_weights()], root_rank=0)
    got, history = _fit(_model(seed=hvd.rank()), hvd.DistributedOptimizer(keras.optimizers.SGD(0.0)), _shard(x),
                        _shard(y) * (1 + hvd.rank()), ROWS, 2,
                        [hvd.callbacks.BroadcastGlobalVariablesCallback(0), hvd.callbacks.MetricAverageCallback()])
    for g, w in zip(got, root_weights):
        np.testing.assert_allclose(g, w)
    losses = hvd.allgather_object(history.history["loss"])
    assert all(np.allclose(loss, losses[0]) for loss in losses)
