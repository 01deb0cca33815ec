"""chorus.tensorflow with process sets (Horovod's test_tensorflow_process_sets.py
is the model): collectives inside a set, refusals of a set this rank is not
in (InvalidArgumentError, on that rank alone) and of an unregistered one
(ValueError), process_set_included_op, and DistributedGradientTape and the
TF1 DistributedOptimizer reducing over the set, a non-member keeping its
own gradients."""
import numpy as np
import pytest
import tensorflow as tf

import chorus.tensorflow as hvd


@pytest.fixture
def even_set():
    if hvd.size() < 2:
        pytest.skip("needs 2 ranks or more")
    s = hvd.add_process_set(list(range(0, hvd.size(), 2)))
    yield s
    hvd.allreduce(tf.zeros([1]), name="tf.ps.after")  # no rank removes it while another still uses it
    hvd.remove_process_set(s)


def _even_mean(r):
    evens = list(range(0, hvd.size(), 2))
    return sum(evens) / len(evens) if r % 2 == 0 else float(r)


def test_collectives_inside_a_set_and_refusals(even_set):
    r = hvd.rank()
    included = int(hvd.process_set_included_op(even_set.process_set_id).numpy())
    assert included == (1 if r % 2 == 0 else 0)
    assert int(hvd.process_set_included_op().numpy()) == 1
    if r % 2 == 0:
        got = hvd.allreduce(tf.constant([float(r)]), process_set=even_set, name="tf.ps.mean")
        np.testing.assert_allclose(got.numpy(), [_even_mean(r)])
    else:
        with pytest.raises(tf.errors.InvalidArgumentError, match="not a member"):
            hvd.allreduce(tf.constant([float(r)]), process_set=even_set)
    fake = hvd.ProcessSet([0])
    fake.process_set_id = 10  # as Horovod's test: never registered
    with pytest.raises(ValueError, match="not registered"):
        hvd.allreduce(tf.constant([1.0]), process_set=fake)
    with pytest.raises(ValueError, match="no process set has id 10"):
        hvd.process_set_included_op(10)


def test_gradients_reduced_over_the_set(even_set):
    r = hvd.rank()
    x = tf.constant(float(r))
    with tf.GradientTape() as g:
        g.watch(x)
        y = x * x
    (dx,) = hvd.DistributedGradientTape(g, process_set=even_set).gradient(y, [x])
    np.testing.assert_allclose(dx.numpy(), 2.0 * _even_mean(r))


def test_tf1_distributed_optimizer_over_the_set(even_set):
    r = hvd.rank()
    with tf.Graph().as_default():
        var = tf.compat.v1.get_variable("w", initializer=[0.0])

        class Constant(tf.compat.v1.train.GradientDescentOptimizer):
            def compute_gradients(self, *args, **kwargs):
                return [(tf.constant([float(r)]), var)]

        opt = hvd.DistributedOptimizer(Constant(1.0), process_set=even_set)
        update = opt.apply_gradients(opt.compute_gradients())
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            sess.run(update)
            np.testing.assert_allclose(sess.run(var), [-_even_mean(r)])
    with pytest.raises(NotImplementedError, match="backward_passes_per_step"):
        hvd.DistributedOptimizer(tf.compat.v1.train.GradientDescentOptimizer(1.0), backward_passes_per_step=2)
