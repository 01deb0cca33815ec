"""Training with chorus.jax: an optax step under jax.jit with the gradients
averaged over the ranks equals one process stepping on the whole batch
(with and without backward_passes_per_step, and with fp16 compression);
broadcast_parameters; the elastic JaxState's commit, restore and sync; the
translation of XLA's errors for the elastic loop."""
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import chorus.jax as hvd


def _data(rows_per_rank=4):
    rng = np.random.default_rng(3)
    x = rng.normal(size=(rows_per_rank * hvd.size(), 3)).astype(np.float32)
    y = (x @ np.array([1.0, -2.0, 0.5], np.float32) + 0.3)[:, None]
    return x, y


def _loss(params, x, y):
    return jnp.mean((x @ params["w"] + params["b"] - y) ** 2)


def _params():
    return {"w": jnp.zeros((3, 1)), "b": jnp.zeros((1,))}


def _mine(a, rows):
    return a[hvd.rank() * rows:(hvd.rank() + 1) * rows]


@pytest.mark.parametrize("compression", ["none", "fp16"])
def test_a_jitted_optax_step_equals_one_process_on_the_whole_batch(compression):
    x, y = _data()
    tx = hvd.optax.DistributedGradientTransformation(optax.sgd(0.1, momentum=0.9),
                                                     compression=getattr(hvd.Compression, compression))
    reference_tx = optax.sgd(0.1, momentum=0.9)

    @jax.jit
    def step(params, state, x, y):
        grads = jax.grad(_loss)(params, x, y)
        updates, state = tx.update(grads, state, params)
        return optax.apply_updates(params, updates), state

    params, state = _params(), tx.init(_params())
    ref, ref_state = _params(), reference_tx.init(_params())
    for _ in range(5):
        params, state = step(params, state, _mine(x, 4), _mine(y, 4))
        updates, ref_state = reference_tx.update(jax.grad(_loss)(ref, x, y), ref_state, ref)
        ref = optax.apply_updates(ref, updates)
    tol = 2e-3 if compression == "fp16" else 1e-5
    for k in params:
        np.testing.assert_allclose(params[k], ref[k], rtol=tol, atol=tol)


def test_backward_passes_per_step_steps_once_per_k_calls():
    x, y = _data(rows_per_rank=4)
    k = 2
    tx = hvd.optax.DistributedGradientTransformation(optax.adam(0.05), backward_passes_per_step=k,
                                                     average_aggregated_gradients=True)
    reference_tx = optax.adam(0.05)

    @jax.jit
    def step(params, state, x, y):
        updates, state = tx.update(jax.grad(_loss)(params, x, y), state, params)
        return optax.apply_updates(params, updates), state

    params, state = _params(), tx.init(_params())
    ref, ref_state = _params(), reference_tx.init(_params())
    halves = [slice(0, 2), slice(2, 4)]
    for _ in range(3):
        for h in halves:  # k micro-batches of this rank's rows
            before = params
            params, state = step(params, state, _mine(x, 4)[h], _mine(y, 4)[h])
        assert not np.allclose(before["w"], params["w"])  # stepped at the k-th call only
        # one process: the mean of the k micro-batch gradients of every rank's rows
        per_rank = [jax.grad(_loss)(ref, x[q * 4:(q + 1) * 4][h], y[q * 4:(q + 1) * 4][h])
                    for q in range(hvd.size()) for h in halves]
        grads = jax.tree_util.tree_map(lambda *g: sum(g) / len(g), *per_rank)
        updates, ref_state = reference_tx.update(grads, ref_state, ref)
        ref = optax.apply_updates(ref, updates)
    for name in params:
        np.testing.assert_allclose(params[name], ref[name], rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="backward_passes_per_step"):
        hvd.optax.DistributedGradientTransformation(optax.sgd(0.1), backward_passes_per_step=0)


def test_allreduce_gradients_chains_with_any_optimizer():
    tx = optax.chain(hvd.optax.allreduce_gradients(op=hvd.Sum), optax.scale(-1.0))
    grads = {"a": jnp.ones(2) * (hvd.rank() + 1), "b": jnp.ones((1, 1))}
    updates, _ = jax.jit(tx.update)(grads, tx.init(grads))
    np.testing.assert_allclose(updates["a"], -np.full(2, sum(range(1, hvd.size() + 1))))


def test_broadcast_parameters_packs_each_dtype():
    tree = {"w": jnp.full((2, 3), float(hvd.rank())), "steps": jnp.asarray(hvd.rank() + 5, jnp.int32),
            "nested": [jnp.arange(4.0) + hvd.rank()]}
    got = hvd.broadcast_parameters(tree, root_rank=0)
    np.testing.assert_array_equal(got["w"], np.zeros((2, 3)))
    assert int(got["steps"]) == 5 and got["steps"].dtype == jnp.int32
    np.testing.assert_array_equal(got["nested"][0], np.arange(4.0))
    assert hvd.broadcast_object({"r": hvd.rank()}, root_rank=0) == {"r": 0}


def test_jax_state_commit_restore_and_sync():
    state = hvd.elastic.JaxState(params={"w": jnp.full(2, float(hvd.rank()))}, epoch=hvd.rank())
    state.commit()
    state.params = {"w": jnp.full(2, 9.0)}
    state.epoch = 9
    state.restore()
    np.testing.assert_array_equal(state.params["w"], np.full(2, float(hvd.rank())))
    assert state.epoch == hvd.rank()
    state.sync()
    np.testing.assert_array_equal(state.params["w"], np.zeros(2))
    assert state.epoch == 0


def test_a_lost_rank_inside_jit_is_the_elastic_loops_aborted_error():
    from chorus.errors import AbortedError
    from chorus.jax import elastic

    class XlaRuntimeError(RuntimeError):  # jaxlib's, by name: it has no stable import path
        pass

    lost = elastic._as_chorus_error(XlaRuntimeError("ABORTED: rank 2 closed it"))
    assert isinstance(lost, AbortedError) and "rank 2 closed it" in str(lost)
    # The runtime still runs: a mismatch is a bug, not a lost rank.
    assert elastic._as_chorus_error(XlaRuntimeError("FAILED_PRECONDITION: shapes differ")) is None
    assert elastic._as_chorus_error(XlaRuntimeError("INVALID_ARGUMENT: bad")) is None
    assert elastic._as_chorus_error(RuntimeError("ABORTED: not XLA's")) is None
