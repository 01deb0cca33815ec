"""SyncBatchNormalization against one process normalizing every rank's
batch together (outputs, moving statistics, the inputs' gradients), and the
TensorFlow elastic states' commit, restore and sync without an elastic job,
and the translation of TensorFlow's errors for the elastic loop (the loop
itself is Python's generic one, test/python; a kill in mid-fit is ctest
tensorflow_elastic_example)."""
import keras
import numpy as np
import pytest
import tensorflow as tf

import chorus.tensorflow as hvd
import keras_fit  # test/common, on the path: conftest

if int(keras.__version__.split(".")[0]) < 3:
    pytest.skip("SyncBatchNormalization needs Keras 3", allow_module_level=True)

ROWS = 4


def _batches():
    rng = np.random.default_rng(5)
    return rng.normal(size=(ROWS * hvd.size(), 3)).astype(np.float32) * 2 + 1


def _normalize(layer, x):
    x = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = layer(x, training=True)
        loss = tf.reduce_sum(y * tf.range(1.0, 4.0))
    return y.numpy(), tape.gradient(loss, x).numpy(), layer.moving_mean.numpy(), layer.moving_variance.numpy()


@pytest.mark.parametrize("mode", ["eager", "function"])
def test_sync_batch_norm_is_one_batch_norm_over_every_rank(mode):
    r = hvd.rank()
    x = _batches()
    sync = hvd.SyncBatchNormalization(momentum=0.5)
    plain = keras.layers.BatchNormalization(momentum=0.5)
    run = _normalize if mode == "eager" else (lambda layer, v: tf.function(lambda t: _normalize_graph(layer, t))(v))
    y, dx, mean, var = run(sync, x[ROWS * r:ROWS * (r + 1)])
    y_ref, dx_ref, mean_ref, var_ref = _normalize(plain, x)  # one process, the whole batch
    np.testing.assert_allclose(y, y_ref[ROWS * r:ROWS * (r + 1)], rtol=1e-4, atol=1e-5)
    # The gradient of every rank's loss (their sum) with respect to this rank's rows.
    np.testing.assert_allclose(dx, dx_ref[ROWS * r:ROWS * (r + 1)], rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(mean, mean_ref, rtol=1e-5)
    np.testing.assert_allclose(var, var_ref, rtol=1e-4)


def _normalize_graph(layer, x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = layer(x, training=True)
        loss = tf.reduce_sum(y * tf.range(1.0, 4.0))
    return y, tape.gradient(loss, x), layer.moving_mean, layer.moving_variance


def test_keras_state_commit_restore_and_sync():
    keras_fit.check_keras_state(hvd, hvd.elastic.TensorFlowKerasState)


def test_tensorflow_state_of_plain_variables():
    v = tf.Variable(tf.fill([2], float(hvd.rank())))
    state = hvd.elastic.TensorFlowState([v], step=1)
    v.assign([7.0, 7.0])
    state.restore()
    np.testing.assert_array_equal(v.numpy(), np.full(2, float(hvd.rank())))
    state.sync()
    np.testing.assert_array_equal(v.numpy(), np.zeros(2))


def test_keras_elastic_callbacks_keep_the_state_current():
    import chorus.keras as hvd_keras
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile(optimizer=hvd_keras.DistributedOptimizer(keras.optimizers.SGD(0.01)), loss="mse")
    state = hvd_keras.elastic.KerasState(model, batch=0, epoch=0)
    seen = []

    class Record(keras.callbacks.Callback):
        def on_batch_end(self, batch, logs=None):
            seen.append((state.epoch, state.batch))

    x, y = np.ones((8, 3), np.float32), np.ones((8, 1), np.float32)
    model.fit(x, y, batch_size=4, epochs=2, verbose=0, shuffle=False,
              callbacks=[hvd_keras.elastic.CommitStateCallback(state, batches_per_commit=2),
                         hvd_keras.elastic.UpdateBatchStateCallback(state),
                         hvd_keras.elastic.UpdateEpochStateCallback(state), Record()])
    assert seen == [(0, 1), (0, 2), (1, 1), (1, 2)]
    assert (state.epoch, state.batch) == (2, 0)
    trained = [w.copy() for w in model.get_weights()]
    model.set_weights([w * 0 for w in trained])
    state.restore()  # the last commit: the end of the last epoch
    for got, want in zip(model.get_weights(), trained):
        np.testing.assert_array_equal(got, want)
    # After a reset, a new fit() counts on from the epochs done, as
    # fit(epochs=E - state.epoch) (Horovod's examples) or with initial_epoch.
    epoch_callback = hvd_keras.elastic.UpdateEpochStateCallback(state)
    model.fit(x, y, batch_size=4, epochs=3 - state.epoch, verbose=0, callbacks=[epoch_callback])
    assert state.epoch == 3
    model.fit(x, y, batch_size=4, initial_epoch=state.epoch, epochs=5, verbose=0, callbacks=[epoch_callback])
    assert state.epoch == 5
    with pytest.raises(ValueError, match="batches_per_commit"):
        hvd_keras.elastic.CommitStateCallback(state, batches_per_commit=0)


def test_a_lost_rank_inside_a_graph_is_the_elastic_loops_aborted_error():
    from chorus.errors import AbortedError
    from chorus.tensorflow import elastic

    lost = elastic._as_chorus_error(tf.errors.AbortedError(None, None, "rank 2 closed it"))
    assert isinstance(lost, AbortedError) and "rank 2 closed it" in str(lost)
    # The runtime still runs: a mismatch (FailedPrecondition) is a bug, not a lost rank.
    assert elastic._as_chorus_error(tf.errors.FailedPreconditionError(None, None, "shapes differ")) is None
    assert elastic._as_chorus_error(tf.errors.InvalidArgumentError(None, None, "bad")) is None
    assert elastic._as_chorus_error(ValueError("not TensorFlow's")) is None
