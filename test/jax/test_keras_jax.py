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

import keras_fit  # noqa: E402  (test/common, on the path: conftest; shared by every backend's Keras tests)


@pytest.mark.parametrize("compression", ["none", "fp16"])
def test_fit_on_the_jax_backend_matches_one_process_on_all_the_data(compression):
    from chorus.jax import Compression
    keras_fit.check_fit_matches_one_process(hvd, getattr(Compression, compression),
                                            tol=2e-3 if compression == "fp16" else 1e-5)


def test_backward_passes_per_step_on_the_jax_backend():
    keras_fit.check_backward_passes_per_step(hvd)


def test_callbacks_on_the_jax_backend():
    keras_fit.check_callbacks(hvd)


def test_value_collectives_on_the_jax_backend():
    keras_fit.check_value_collectives(hvd)
