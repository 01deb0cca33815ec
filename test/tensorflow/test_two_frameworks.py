"""One job, two frameworks: chorus.torch and chorus.tensorflow in one
process on the one runtime (one init, one negotiation): a torch model and a
Keras model trained side by side, each against one process training on
every rank's data; and their collectives in flight together."""
import threading

import keras
import numpy as np
import pytest

if int(keras.__version__.split(".")[0]) < 3:
    pytest.skip("chorus.keras needs Keras 3", allow_module_level=True)
import tensorflow as tf

torch = pytest.importorskip("torch")
import chorus.keras as hvd_keras  # noqa: E402
import chorus.tensorflow as hvd_tf  # noqa: E402
import chorus.torch as hvd_torch  # noqa: E402

ROWS = 8


def _data(seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(ROWS * hvd_tf.size(), 4)).astype(np.float32)
    return x, (x @ rng.normal(size=(4, 1))).astype(np.float32)


def _shard(a):
    r = hvd_tf.rank()
    return a[ROWS * r:ROWS * (r + 1)]


def _torch_train(x, y, distributed):
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    if distributed:
        opt = hvd_torch.DistributedOptimizer(opt, named_parameters=model.named_parameters())
    for _ in range(5):
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(torch.from_numpy(x)), torch.from_numpy(y)).backward()
        opt.step()
    return [p.detach().numpy().copy() for p in model.parameters()]


def _keras_train(x, y, distributed):
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
    opt = keras.optimizers.SGD(0.05)
    model.compile(optimizer=hvd_keras.DistributedOptimizer(opt) if distributed else opt, loss="mse")
    model.fit(x, y, batch_size=len(x), epochs=5, shuffle=False, verbose=0)
    return model.get_weights()


def test_a_torch_and_a_keras_model_side_by_side():
    (xt, yt), (xk, yk) = _data(1), _data(2)
    got_torch = _torch_train(_shard(xt), _shard(yt), True)
    got_keras = _keras_train(_shard(xk), _shard(yk), True)
    for g, w in zip(got_torch, _torch_train(xt, yt, False)):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-6)
    for g, w in zip(got_keras, _keras_train(xk, yk, False)):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-6)


def test_torch_and_tensorflow_collectives_in_flight_together():
    n, r = hvd_tf.size(), hvd_tf.rank()
    results = {}

    def torch_side():
        handles = [hvd_torch.allreduce_async(torch.full((5,), float(r + k)), op=hvd_torch.Sum, name=f"two.torch.{k}")
                   for k in range(8)]
        results["torch"] = [hvd_torch.synchronize(h) for h in handles]

    thread = threading.Thread(target=torch_side)
    thread.start()
    got_tf = hvd_tf.grouped_allreduce([tf.fill([3], float(r * k)) for k in range(8)], op=hvd_tf.Sum)
    thread.join()
    total = n * (n - 1) / 2
    for k in range(8):
        np.testing.assert_allclose(results["torch"][k].numpy(), np.full(5, total + n * k))
        np.testing.assert_allclose(got_tf[k].numpy(), np.full(3, total * k))
