"""DistributedOptimizer, SyncBatchNorm and the state broadcasts against
single-process references: every rank trains on its own shard, and the
result must equal one process training on the whole batch."""
import warnings

import pytest

torch = pytest.importorskip("torch")
import chorus.torch as hvd  # noqa: E402

ROWS = 3  # per rank; rank r's shard is rows [r*ROWS, (r+1)*ROWS) of the global batch


def global_batch(n, seed=7):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n * ROWS, 5, generator=g, dtype=torch.float64), torch.randn(n * ROWS, 2, generator=g,
                                                                                    dtype=torch.float64)


def make_model():
    torch.manual_seed(1)
    return torch.nn.Sequential(torch.nn.Linear(5, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2)).double()


def shard(t):
    r = hvd.rank()
    return t[r * ROWS:(r + 1) * ROWS]


def reference_step(passes=1, lr=0.1, momentum=0.9, steps=2):
    """One process, the whole batch: the mean loss over every rank's rows."""
    model = make_model()
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=momentum)
    x, y = global_batch(hvd.size())
    for _ in range(steps):
        opt.zero_grad()
        for _ in range(passes):
            torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
    return model


def distributed_step(passes=1, steps=2, groups_of=None, **options):
    model = make_model()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    if groups_of is not None:
        options["groups"] = groups_of(list(model.parameters()))
    opt = hvd.DistributedOptimizer(opt, named_parameters=model.named_parameters(), backward_passes_per_step=passes,
                                   **options)
    x, y = global_batch(hvd.size())
    for _ in range(steps):
        opt.zero_grad()
        for _ in range(passes):
            torch.nn.functional.mse_loss(model(shard(x)), shard(y)).backward()
        opt.step()
    return model, opt


def assert_same(model, ref, tol=1e-9):
    for (name, p), q in zip(model.named_parameters(), ref.parameters()):
        assert torch.allclose(p, q, atol=tol, rtol=tol), name


def test_matches_one_process_on_the_whole_batch():
    model, opt = distributed_step()
    assert isinstance(opt, torch.optim.SGD) and type(opt).__name__ == "SGD"
    assert_same(model, reference_step())


def test_backward_passes_per_step_accumulates_locally():
    model, _ = distributed_step(passes=2)
    assert_same(model, reference_step(passes=2))


def test_gradient_predivide_factor_and_groups():
    model, _ = distributed_step(gradient_predivide_factor=2.0)
    assert_same(model, reference_step())
    model, _ = distributed_step(groups=2)
    assert_same(model, reference_step())
    model, _ = distributed_step(groups_of=lambda params: [[params[0], params[2]]])  # the rest one by one
    assert_same(model, reference_step())
    with pytest.raises(ValueError, match="not among the optimizer's parameters"):
        distributed_step(groups_of=lambda params: [[torch.nn.Parameter(torch.ones(1))]])


def test_fp16_compression_is_close():
    model, _ = distributed_step(compression=hvd.Compression.fp16)
    assert_same(model, reference_step(), tol=2e-3)
    model, _ = distributed_step(compression=hvd.Compression.bf16)
    assert_same(model, reference_step(), tol=2e-2)


def test_sum_op_and_constructor_errors():
    with pytest.raises(ValueError, match="unique"):
        model = make_model()
        hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=1),
                                 named_parameters=[("a", p) for p in model.parameters()])
    with pytest.raises(ValueError, match="backward_passes_per_step"):
        model = make_model()
        hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=1), backward_passes_per_step=0)
    with pytest.raises(ValueError, match="gradient_predivide_factor"):
        model = make_model()
        hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=1), op=hvd.Sum, gradient_predivide_factor=2)


def test_synchronize_skip_synchronize_and_warning():
    model = make_model()
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                   named_parameters=model.named_parameters())
    x, y = global_batch(hvd.size())
    torch.nn.functional.mse_loss(model(shard(x)), shard(y)).backward()
    with pytest.raises(AssertionError, match="zero_grad"):
        if hvd.size() > 1:
            opt.zero_grad()
        else:
            raise AssertionError("zero_grad: no hooks at 1 rank")
    opt.synchronize()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    with opt.skip_synchronize():
        opt.step()
    opt.zero_grad()
    torch.nn.functional.mse_loss(model(shard(x)), shard(y)).backward()
    opt.synchronize()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        opt.step()
    assert any("skip_synchronize" in str(w.message) for w in caught)


def test_rank_whose_graph_misses_a_parameter():
    # Rank 0 never uses the second layer: its gradient is None, and it still
    # takes part in that allreduce (with zeros), so no rank waits.
    model = torch.nn.ModuleDict({"a": torch.nn.Linear(3, 1), "b": torch.nn.Linear(3, 1)})
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                   named_parameters=model.named_parameters())
    x = torch.ones(2, 3)
    loss = model["a"](x).sum() + (model["b"](x).sum() if hvd.rank() != 0 else 0)
    loss.backward()
    opt.step()
    n = hvd.size()
    if n == 1:  # one rank: no allreduce at all, as Horovod
        assert model["b"].weight.grad is None
    else:
        assert torch.allclose(model["b"].weight.grad, torch.full((1, 3), 2.0 * (n - 1) / n))


def test_sparse_gradients_and_sparse_as_dense():
    for as_dense in (False, True):
        torch.manual_seed(3)
        emb = torch.nn.Embedding(10, 3, sparse=True)
        opt = hvd.DistributedOptimizer(torch.optim.SGD(emb.parameters(), lr=0.5),
                                       named_parameters=emb.named_parameters(), sparse_as_dense=as_dense)
        index = torch.tensor([hvd.rank() % 10, 9])
        emb(index).sum().backward()
        opt.step()
        torch.manual_seed(3)
        ref = torch.nn.Embedding(10, 3)
        grad = torch.zeros(10, 3)
        for k in range(hvd.size()):
            grad[k % 10] += 1
            grad[9] += 1
        assert torch.allclose(emb.weight, ref.weight - 0.5 * grad / hvd.size(), atol=1e-6), as_dense


def test_optimizer_in_a_process_set(even_odd_sets):
    even, odd = even_odd_sets
    mine = even if hvd.rank() % 2 == 0 else odd
    model = make_model()
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1), named_parameters=model.named_parameters(),
                                   process_set=mine)
    model(torch.full((1, 5), float(hvd.rank()), dtype=torch.float64)).sum().backward()
    opt.step()
    grads = hvd.allgather_object([p.grad.clone() for p in model.parameters()])
    for k in mine.ranks:
        for a, b in zip(grads[k], grads[mine.ranks[0]]):
            assert torch.allclose(a, b)


def test_broadcast_optimizer_state():
    r = hvd.rank()
    model = make_model()
    opt = torch.optim.Adam(model.parameters(), lr=0.01 * (r + 1))
    if r == 0:
        model(torch.ones(1, 5, dtype=torch.float64)).sum().backward()
        opt.step()
    hvd.broadcast_optimizer_state(opt, root_rank=0)
    states = hvd.allgather_object(opt.state_dict())
    assert all(s["param_groups"][0]["lr"] == 0.01 for s in states)
    for s in states:
        for key, value in s["state"].items():
            assert torch.equal(value["exp_avg"], states[0]["state"][key]["exp_avg"])


def test_sync_batch_norm_matches_batch_norm_on_the_union():
    n, r = hvd.size(), hvd.rank()
    g = torch.Generator().manual_seed(11)
    rows = [2 + k for k in range(n)]
    full = torch.randn(sum(rows), 3, 4, generator=g, dtype=torch.float64)
    mine = full[sum(rows[:r]):sum(rows[:r + 1])].clone().requires_grad_()
    sync = hvd.SyncBatchNorm(3).double()
    ref = torch.nn.BatchNorm1d(3).double()
    with torch.no_grad():
        sync.weight.copy_(torch.tensor([1.0, 2.0, 0.5]))
        ref.weight.copy_(sync.weight)
    upstream = torch.randn(full.shape, generator=g, dtype=torch.float64)
    for _ in range(2):
        out = sync(mine)
        (out * upstream[sum(rows[:r]):sum(rows[:r + 1])]).sum().backward()
        full_in = full.clone().requires_grad_()
        ref_out = ref(full_in)
        (ref_out * upstream).sum().backward()
    part = slice(sum(rows[:r]), sum(rows[:r + 1]))
    assert torch.allclose(out, ref_out[part], atol=1e-10)
    assert torch.allclose(mine.grad / 2, full_in.grad[part], atol=1e-10)
    assert torch.allclose(sync.running_mean, ref.running_mean) and torch.allclose(sync.running_var, ref.running_var)
    total_w = hvd.allreduce(sync.weight.grad, op=hvd.Sum, name="bn.wgrad")
    assert torch.allclose(total_w, ref.weight.grad, atol=1e-9)
    sync.eval()
    ref.eval()
    assert torch.allclose(sync(mine.detach()), ref(full)[part], atol=1e-10)


@pytest.mark.parametrize("training", [True, False])
def test_sync_batch_norm_bad_input_on_one_rank_fails_every_rank(training):
    """Training, or in eval without running stats (it synchronizes then too):
    the rank with the wrong channel count refuses the module's allgather,
    so the others fail at once instead of waiting."""
    if hvd.size() < 2:
        pytest.skip("needs 2 ranks or more")
    bad = hvd.rank() == hvd.size() - 1
    sync = hvd.SyncBatchNorm(3, track_running_stats=training, name=f"bn.bad.{training}")
    sync.train(training)
    with pytest.raises(ValueError):
        sync(torch.randn(4, 2 if bad else 3))


def test_flat_gradients_after_the_first_step():
    model, opt = distributed_step(steps=3)
    assert_same(model, reference_step(steps=3))
    if hvd.size() == 1:
        return  # no hooks, nothing flattened (Horovod's one-rank optimizer)
    grads = [p.grad for p in model.parameters()]
    storages = {g.storage().data_ptr() for g in grads}
    assert len(storages) == 1  # one buffer for the float64 gradients
    replaced = list(model.parameters())[0]
    replaced.grad = torch.ones_like(replaced)  # a gradient the user put there: not the buffer's
    opt.zero_grad()
    assert all(torch.all(p.grad == 0) for p in list(model.parameters())[1:])
    assert replaced.grad is None or torch.all(replaced.grad == 0)
