"""chorus.keras on Keras 3 (the TensorFlow backend): model.fit with
DistributedOptimizer against one process training on every rank's data,
backward_passes_per_step, and the callbacks."""
import keras
import numpy as np
import pytest

if int(keras.__version__.split(".")[0]) < 3:
    pytest.skip("chorus.keras needs Keras 3", allow_module_level=True)

import chorus.keras as hvd
import chorus.tensorflow.keras as hvd_tf_path

import keras_fit  # noqa: E402  (test/common, on the path: conftest; shared by every backend's Keras tests)
from keras_fit import ROWS  # noqa: E402

_model, _fit = keras_fit.model, keras_fit.fit


def _data():
    return keras_fit.data(hvd.size())


def _shard(a):
    return keras_fit.shard(a, hvd.rank())


def test_fit_matches_one_process_on_all_the_data():
    x, y = _data()
    opt, plain = hvd.DistributedOptimizer(keras.optimizers.SGD(0.05)), keras.optimizers.SGD(0.05)
    got, _ = _fit(_model(), opt, _shard(x), _shard(y), ROWS, 5)
    want, _ = _fit(_model(), plain, x, y, len(x), 5)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-6)
    # The optimizer's variables are its own: not the model's too (checkpoints, broadcasts).
    assert [v.path.split("/")[-1] for v in opt.variables] == [v.path.split("/")[-1] for v in plain.variables]


@pytest.mark.parametrize("average", [False, True])
def test_backward_passes_per_step(average):
    x, y = _data()
    opt = hvd.DistributedOptimizer(keras.optimizers.SGD(0.05), backward_passes_per_step=2,
                                   average_aggregated_gradients=average)
    got, _ = _fit(_model(), opt, _shard(x), _shard(y), ROWS // 2, 3)  # 2 batches: one update per epoch
    # One update per epoch with the sum (or mean) of the two half-batch means,
    # averaged over the ranks: the whole data's gradient times 2 (or 1).
    want, _ = _fit(_model(), keras.optimizers.SGD(0.05 * (1 if average else 2)), x, y, len(x), 3)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-6)


def test_broadcast_callback_starts_every_rank_from_root():
    x, y = _data()
    model = _model(seed=hvd.rank())  # different weights on every rank
    root_weights = hvd.broadcast_object([w.copy() for w in _model(seed=0).get_weights()], root_rank=0)
    got, _ = _fit(model, hvd.DistributedOptimizer(keras.optimizers.SGD(0.0)), _shard(x), _shard(y), ROWS, 1,
                  [hvd.callbacks.BroadcastGlobalVariablesCallback(0)])
    for g, w in zip(got, root_weights):
        np.testing.assert_allclose(g, w)


def test_metric_average_callback():
    x, y = _data()
    _, history = _fit(_model(), hvd.DistributedOptimizer(keras.optimizers.SGD(0.01)), _shard(x), _shard(y) * (1 + hvd.rank()),
                      ROWS, 2, [hvd.callbacks.MetricAverageCallback()])
    losses = hvd.allgather_object(history.history["loss"])
    assert all(np.allclose(l, losses[0]) for l in losses)  # the same average on every rank


def test_learning_rate_warmup_reaches_the_initial_rate():
    x, y = _data()
    opt = hvd.DistributedOptimizer(keras.optimizers.SGD(0.1))
    seen = []

    class Record(keras.callbacks.Callback):
        def on_batch_begin(self, batch, logs=None):
            seen.append(float(self.model.optimizer.learning_rate))

    _fit(_model(), opt, _shard(x), _shard(y), ROWS // 4, 3,
         [hvd.callbacks.LearningRateWarmupCallback(0.1, warmup_epochs=2, steps_per_epoch=4), Record()])
    assert seen[0] == pytest.approx(0.1 / hvd.size())
    assert seen[-1] == pytest.approx(0.1)  # after the warmup: untouched


def test_refusals():
    with pytest.raises(TypeError, match="keras.optimizers.Optimizer"):
        hvd.DistributedOptimizer(object())
    assert hvd_tf_path.DistributedOptimizer is hvd.DistributedOptimizer


def test_value_collectives():
    keras_fit.check_value_collectives(hvd_tf_path)  # under Horovod's path: horovod.tensorflow.keras
