"""chorus.keras on Keras 3's torch backend (KERAS_BACKEND=torch, set here
before Keras loads): model.fit with DistributedOptimizer, Keras's eager
train step with chorus.torch's grouped allreduce inside, against one
process training on every rank's data; and the callbacks. Keras 3 needs
torch >= 2.1: with Debian's torch 1.13 (the test venv's) the module skips;
docs/tensorflow.md says where it ran."""
import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")
if tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2]) < (2, 1):
    pytest.skip(f"Keras 3's torch backend needs torch >= 2.1; this is {torch.__version__}", allow_module_level=True)
os.environ["KERAS_BACKEND"] = "torch"  # only where it can run: the other modules' child processes inherit it
keras = pytest.importorskip("keras")
if int(keras.__version__.split(".")[0]) < 3 or keras.backend.backend() != "torch":
    pytest.skip("Keras 3 on the torch backend is not what loaded here", allow_module_level=True)

import chorus.keras as hvd  # noqa: E402
import keras_fit  # noqa: E402  (test/common, on the path: conftest; shared by every backend's Keras tests)


@pytest.mark.parametrize("compression", ["none", "fp16"])
def test_fit_on_the_torch_backend_matches_one_process_on_all_the_data(compression):
    from chorus.torch import Compression
    keras_fit.check_fit_matches_one_process(hvd, getattr(Compression, compression),
                                            tol=2e-3 if compression == "fp16" else 1e-5)


def test_backward_passes_per_step_on_the_torch_backend():
    keras_fit.check_backward_passes_per_step(hvd)


def test_callbacks_on_the_torch_backend():
    keras_fit.check_callbacks(hvd)


def test_the_optimizer_reduces_torch_tensors():
    """The hook itself: the gradients Keras hands the optimizer (torch
    tensors) come back averaged over the ranks, still torch tensors."""
    opt = hvd.DistributedOptimizer(keras.optimizers.SGD(1.0), op=hvd.Sum)
    v = keras.Variable(np.zeros(3, np.float32))
    opt.apply([torch.full((3,), float(hvd.rank() + 1))], [v])
    n = hvd.size()
    np.testing.assert_allclose(keras.ops.convert_to_numpy(v), np.full(3, -n * (n + 1) / 2))


def test_keras_state_commit_restore_and_sync_on_the_torch_backend():
    """KerasState without TensorFlow (keras.ops)."""
    keras_fit.check_keras_state(hvd, hvd.elastic.KerasState)


def test_value_collectives_on_the_torch_backend():
    keras_fit.check_value_collectives(hvd)
